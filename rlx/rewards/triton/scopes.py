"""Python's name scoping, computed on the AST: for every `Name`, the scope that binds it, as the compiler does.

Scopes are the module, each class body, and each function-like block (def, lambda, comprehension). A name
read in a function is local if the function binds it anywhere (parameters, assignment and loop targets,
imports, defs, `with ... as`, `except ... as`, `del`, match captures, and walrus targets of its comprehensions),
else free from the nearest enclosing *function* that binds it (class bodies are skipped), else global; `global`
and `nonlocal` declarations override. A class body reads its own bindings first and falls through to globals
(and the builtins) when the binding never ran; the module does the same. tests/rewards/test_triton_static.py
checks this against the standard library's `symtable` on the recall and attack corpora.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

MODULE, CLASS, FUNCTION = "module", "class", "function"
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(eq=False)
class Scope:
    kind: str
    node: ast.AST
    parent: Scope | None
    bindings: dict[str, list[ast.AST]] = field(default_factory=dict)  # name -> the nodes that bind it here
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    children: list[Scope] = field(default_factory=list)

    def bind(self, name: str, node: ast.AST) -> None:
        self.bindings.setdefault(name, []).append(node)

    @property
    def comprehension(self) -> bool:
        return isinstance(self.node, COMPREHENSIONS)


@dataclass(frozen=True)
class Resolution:
    """Where a name read in some scope is looked up: `local` (a function's own), `free` (an enclosing
    function's), `class` (a class body's, falling through to globals and builtins when unbound), `global`."""

    kind: str
    scope: Scope


class Scopes:
    """The scopes of one module and the scope each Name node is read or bound in."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = Scope(MODULE, tree, None)
        self.of: dict[int, Scope] = {}  # id(Name / arg / def node) -> the scope it appears in
        self.owner: dict[int, Scope] = {}  # id(def / lambda / class / comprehension node) -> its own scope
        self._visit_body(tree.body, self.module)

    # -- resolution ---------------------------------------------------------------------------------------
    def resolve(self, name: str, scope: Scope) -> Resolution:
        if name in scope.declared_global:
            return Resolution("global", self.module)
        if scope.kind == MODULE:
            return Resolution("global", self.module)
        if name in scope.declared_nonlocal:
            return Resolution("free", self._enclosing_binder(name, scope.parent))
        if name in scope.bindings:
            return Resolution("local" if scope.kind == FUNCTION else "class", scope)
        outer = scope.parent
        while outer is not None and outer.kind != MODULE:
            if outer.kind == FUNCTION:
                if name in outer.declared_global:
                    break
                if name in outer.bindings or name in outer.declared_nonlocal:
                    return Resolution("free", self._enclosing_binder(name, outer))
            outer = outer.parent
        return Resolution("global", self.module)

    def _enclosing_binder(self, name: str, scope: Scope | None) -> Scope:
        """The function scope whose binding of `name` a `nonlocal` (or a free read) refers to."""
        while scope is not None and scope.kind != MODULE:
            if scope.kind == FUNCTION and name in scope.bindings and name not in scope.declared_nonlocal:
                return scope
            scope = scope.parent
        return self.module  # `nonlocal` of a name no function binds does not compile: never reached

    def walk(self, scope: Scope | None = None):
        scope = scope or self.module
        yield scope
        for child in scope.children:
            yield from self.walk(child)

    # -- construction -------------------------------------------------------------------------------------
    def _new(self, kind: str, node: ast.AST, parent: Scope) -> Scope:
        scope = Scope(kind, node, parent)
        parent.children.append(scope)
        self.owner[id(node)] = scope
        return scope

    def _visit_body(self, body: list[ast.stmt], scope: Scope) -> None:
        for statement in body:
            self._visit(statement, scope)

    def _visit_all(self, nodes, scope: Scope) -> None:
        for node in nodes:
            if node is not None:
                self._visit(node, scope)

    def _arguments(self, args: ast.arguments, scope: Scope) -> list[ast.arg]:
        """Visits defaults and annotations in `scope` (where Python evaluates them); returns the parameters."""
        self._visit_all(args.defaults, scope)
        self._visit_all(args.kw_defaults, scope)
        params = [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs]
        params += [args.kwarg] if args.kwarg else []
        for param in params:
            if param.annotation is not None:
                self._visit(param.annotation, scope)
        return params

    def _visit(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = self._arguments(node.args, scope)
            if node.returns is not None:
                self._visit(node.returns, scope)
            self._visit_all(node.decorator_list, scope)
            scope.bind(node.name, node)
            self.of[id(node)] = scope
            inner = self._new(FUNCTION, node, scope)
            for param in params:
                inner.bind(param.arg, param)
                self.of[id(param)] = inner
            self._visit_body(node.body, inner)
        elif isinstance(node, ast.Lambda):
            params = self._arguments(node.args, scope)
            inner = self._new(FUNCTION, node, scope)
            for param in params:
                inner.bind(param.arg, param)
                self.of[id(param)] = inner
            self._visit(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            self._visit_all(node.bases, scope)
            self._visit_all(node.keywords, scope)
            self._visit_all(node.decorator_list, scope)
            scope.bind(node.name, node)
            self.of[id(node)] = scope
            self._visit_body(node.body, self._new(CLASS, node, scope))
        elif isinstance(node, COMPREHENSIONS):
            self._visit(node.generators[0].iter, scope)  # the outermost iterable is evaluated outside
            inner = self._new(FUNCTION, node, scope)
            for i, generator in enumerate(node.generators):
                if i:
                    self._visit(generator.iter, inner)
                self._visit(generator.target, inner)
                self._visit_all(generator.ifs, inner)
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            self._visit_all(elements, inner)
        elif isinstance(node, ast.NamedExpr):
            self._visit(node.value, scope)
            target = scope
            while target.comprehension:  # a walrus in a comprehension binds in the enclosing block
                assert target.parent is not None
                target = target.parent
            self._visit(node.target, target)
        elif isinstance(node, ast.Name):
            self.of[id(node)] = scope
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                scope.bind(node.id, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                scope.bind(alias.asname or alias.name.split(".")[0], node)
        elif isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.declared_nonlocal.update(node.names)
        elif isinstance(node, ast.ExceptHandler):
            if node.name:
                scope.bind(node.name, node)
            self._visit_all([node.type], scope)
            self._visit_body(node.body, scope)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            if node.name:
                scope.bind(node.name, node)
            self._children(node, scope)
        elif isinstance(node, ast.MatchMapping):
            if node.rest:
                scope.bind(node.rest, node)
            self._children(node, scope)
        else:
            self._children(node, scope)

    def _children(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self._visit(child, scope)
