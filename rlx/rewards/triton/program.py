"""What a candidate program's names are, for the static check (rlx.rewards.triton.static): which imports and
modules a name can hold, which classes and methods are its own, which functions are Triton kernels, and which
names are a method's own instance (`self`). Everything is decided by scope (rlx.rewards.triton.scopes), never
by spelling: a function whose first parameter is named `self` is not a method, and a decorator named `jit`
is `triton.jit` only if the name holds the import of triton's.

Module attributes are resolved on the real modules (imported here, in the checker, never in the candidate's
process): `F.torch` is torch reached through a path that is not its own, and refused like `torch.utils`.
"""

from __future__ import annotations

import ast
import functools
import importlib
import types
from dataclasses import dataclass

from rlx.rewards.triton.scopes import CLASS, FUNCTION, Resolution, Scope, Scopes
from rlx.rewards.triton.vocabulary import DENIED_ATTRIBUTES, importable

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class Refused(Exception):
    """The first construct the static check refuses, in words."""


@dataclass(frozen=True)
class Held:
    """What an import binds: a module (`value` is the module) or an attribute of one (`owner.attr`)."""

    path: str  # canonical dotted path: "torch.nn.functional", "triton.jit"
    value: object
    module: bool


_MISSING = object()


@functools.lru_cache(maxsize=2048)
def lookup(path: str) -> Held | None:
    """The module or attribute at a dotted path that begins with an importable module, or None where it does
    not exist (the program would fail there at run time). Refused: private parts, denied modules and
    attributes, and a module reached through a path that is not its own (`F.torch`)."""
    parts = path.split(".")
    if not importable(parts[0]):
        raise Refused(f"import {parts[0]}")
    try:
        value: object = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i in range(1, len(parts)):
        owner, attr = ".".join(parts[:i]), parts[i]
        if not isinstance(value, types.ModuleType):
            return Held(path, None, False)  # past the module: attributes of an object, checked as such
        if attr.startswith("_"):
            raise Refused(f"{owner}.{attr}: a private attribute of a library")
        if attr in DENIED_ATTRIBUTES.get(owner, ()):
            raise Refused(f"{owner}.{attr}")
        found = vars(value).get(attr, _MISSING)
        if found is _MISSING and importable(f"{owner}.{attr}"):
            try:
                found = importlib.import_module(f"{owner}.{attr}")
            except ImportError:
                return None
        if found is _MISSING:
            return None
        if isinstance(found, types.ModuleType):
            if found.__name__ != f"{owner}.{attr}" or not importable(found.__name__):
                raise Refused(f"{owner}.{attr} (the module {found.__name__} by another path)")
        elif isinstance(found, type) and issubclass(found, type):
            raise Refused(f"{owner}.{attr}: a metaclass builds classes from strings")
        value = found
    return Held(path, value, isinstance(value, types.ModuleType))


def caught_import_errors(handlers: list[ast.ExceptHandler]) -> bool:
    """Whether a try's handlers catch a failed import (bare, ImportError, ModuleNotFoundError, Exception)."""
    for handler in handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for kind in kinds:
            if kind is None or (isinstance(kind, ast.Name) and kind.id in IMPORT_ERRORS):
                return True
    return False


def main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` (its body never runs: the program's `__name__` is not "__main__")."""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


class Program:
    """One parsed program: its scopes, what its imports hold, its classes, methods and kernels."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.scopes = Scopes(tree)
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        self.methods = {  # regular methods of the program's classes, by name (reachable through the class)
            f.name
            for c in self.classes
            for f in c.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and not self.decorated(f, "staticmethod")
        }
        self.own_attributes = self._own_attributes()
        self.kernels = {self.key(f): f for f in ast.walk(tree) if self.is_kernel(f)}

    # -- what a name holds -----------------------------------------------------------------------------
    def bindings(self, name: ast.Name) -> tuple[Resolution, list[ast.AST]]:
        resolution = self.scopes.resolve(name.id, self.scopes.of[id(name)])
        found = list(resolution.scope.bindings.get(name.id, []))
        if resolution.kind == "class":  # an unbound class-body name falls through to the module
            found += self.scopes.module.bindings.get(name.id, [])
        return resolution, found

    def held(self, node: ast.AST) -> list[Held | None]:
        """What an expression `a.b.c` can hold when its root is a name bound by an import (one entry per such
        import; None for an import that does not resolve). [] when no import binds the root."""
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or id(node) not in self.scopes.of:
            return []
        out = []
        for binding in self.bindings(node)[1]:
            if isinstance(binding, (ast.Import, ast.ImportFrom)):
                base = self.import_path(binding, node.id)
                out.append(None if base is None else lookup(".".join([base, *chain])))
        return out

    def import_path(self, node: ast.Import | ast.ImportFrom, name: str) -> str | None:
        """The dotted path an import binds to `name`, or None for one the program may not make (it is refused
        where it stands, or tolerated where a failed import is caught: the name is then never bound)."""
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound != name:
                continue
            if isinstance(node, ast.ImportFrom):
                path = f"{node.module}.{alias.name}"
                return path if node.level == 0 and node.module and importable(node.module) else None
            path = alias.name if alias.asname else alias.name.split(".")[0]
            return path if importable(alias.name) else None
        return None

    def class_named(self, name: ast.Name) -> bool:
        """Whether the name holds only the program's own classes."""
        found = self.bindings(name)[1] if id(name) in self.scopes.of else []
        return bool(found) and all(isinstance(b, ast.ClassDef) for b in found)

    # -- methods and their instances --------------------------------------------------------------------
    def decorated(self, function: ast.AST, name: str) -> bool:
        decorators = getattr(function, "decorator_list", [])
        return any(isinstance(d, ast.Name) and d.id == name and self._builtin(d) for d in decorators)

    def _builtin(self, name: ast.Name) -> bool:
        resolution, found = self.bindings(name)
        return resolution.kind in ("global", "class") and not found

    def method_scope(self, scope: Scope) -> bool:
        """A def directly in a class body, not a staticmethod: its first parameter is the instance (or class)."""
        node = scope.node
        return (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and scope.parent is not None
            and scope.parent.kind == CLASS
            and not self.decorated(node, "staticmethod")
            and bool(node.args.posonlyargs + node.args.args)
        )

    def own_instance(self, node: ast.AST) -> bool:
        """Whether `node` is a name holding a method's own `self` (or `cls`): the method's first parameter,
        never rebound in the method or in any scope nested in it."""
        if not isinstance(node, ast.Name) or id(node) not in self.scopes.of:
            return False
        resolution, found = self.bindings(node)
        scope = resolution.scope
        if resolution.kind not in ("local", "free") or not self.method_scope(scope):
            return False
        assert isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef))
        first = (scope.node.args.posonlyargs + scope.node.args.args)[0]
        if found != [first]:
            return False
        return not any(
            node.id in inner.declared_nonlocal and node.id in inner.bindings
            for inner in self.scopes.walk(scope)
            if inner is not scope
        )

    def _own_attributes(self) -> set[str]:
        """Attributes the program defines: `self.X = ...` in its methods and names bound in its class bodies."""
        own = {name for scope in self.scopes.walk() if scope.kind == CLASS for name in scope.bindings}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and self.own_instance(node.value):
                own.add(node.attr)
        return own

    # -- kernels -----------------------------------------------------------------------------------------
    @staticmethod
    def key(function: ast.AST) -> tuple[str, int]:
        """(name, first line) as the function's code object reports them (a decorated def starts at its first
        decorator): how the harness names a launched kernel."""
        assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        return function.name, min([d.lineno for d in function.decorator_list] + [function.lineno])

    def is_kernel(self, node: ast.AST) -> bool:
        """Whether some decorator of a def can be triton.jit (as its import holds it, or a module-level name
        assigned from it: `jit = triton.jit`), called or not."""
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self._holds_jit(target):
                return True
            if isinstance(target, ast.Name):
                assigned = [b for b in self.bindings(target)[1] if isinstance(b, ast.Name)]
                values = [self.parents.get(id(b)) for b in assigned]
                if any(isinstance(v, ast.Assign) and self._holds_jit(v.value) for v in values):
                    return True
        return False

    def _holds_jit(self, node: ast.AST) -> bool:
        # optional dependency: triton (Linux only)
        import triton

        try:
            return any(h is not None and h.value is triton.jit for h in self.held(node))
        except Refused:
            return False  # refused where it stands

    def kernel_scope(self, scope: Scope) -> bool:
        return scope.kind == FUNCTION and isinstance(scope.node, ast.FunctionDef) and self.is_kernel(scope.node)
