"""reward=triton's static check, run in the checker on the completion's text (never on its objects).

It decides only what no runtime record can: whether the program can reach the harness's state, frames, files,
processes, threads or Triton's interpreter internals from inside the candidate's process. Torch compute is
not its business: the runtime account (rlx.rewards.triton.account) records every ATen op forward runs. Names
are resolved by scope, as Python resolves them (rlx.rewards.triton.program, .scopes). Refused:
  * imports outside rlx.rewards.triton.vocabulary.IMPORTS and their denied submodules (a failed import caught by
    `except ImportError` is tolerated: the harness makes it fail at run time), `from x import *`, relative ones;
  * a banned builtin (eval, getattr, open, type, ...) wherever Python would look it up among the builtins,
    whatever assignments exist (a module- or class-level binding falls through when it never ran); names Triton's
    interpreter copies into the program's globals; the names the task file's imports bind, unless the program
    binds them itself at top level (its defs and constants, `Model` and `get_inputs` included, are readable);
    dunder names (but `__name__`);
  * dunder attributes (but `__name__`, `__doc__`... and `.__init__` called), frame/code/handle attributes, a
    library's private attributes (`torch._C`, `t._base`, `m._parameters`) and modules reached by another path
    (`F.torch`), a module used as a value, metaclasses; the program's own private names and attributes are
    fine: an attribute is its own when read through a method's own `self` (its first parameter, never rebound)
    or its own class; the attributes a `match` class pattern names (`case object(__globals__=g)`): no private,
    dunder, frame or handle name;
  * setting attributes through a module-level name or an import (monkeypatching a library; a function's own
    variables, `self` and `ctx` included, are the runtime account's to judge);
  * `super(A, b)` but for its own class and instance, a class with keywords, or bases other than nn.Module,
    torch.autograd.Function, `object`, its own classes and the task's; dunder methods other than `__init__`;
  * Triton language functions called outside kernel bodies (an alias, `triton_tanh = libdevice.tanh`, is fine),
    and inside a kernel (a def decorated by triton.jit as its import holds it) calls of anything but tl.*, the
    program's kernels, module-level aliases of Triton's functions and a few builtins, attributes outside
    Triton's value vocabulary, nested scopes, imports and try/with.
The body of `if __name__ == "__main__":` is skipped (it never runs). A refused program is a VIOLATION whose
`details["reason"]` names the first offence.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Collection
from typing import NamedTuple

from rlx import syntax
from rlx.rewards.triton.kernels import LOADS, WRITES, Key, calling
from rlx.rewards.triton.program import Program, Refused, caught_import_errors, lookup, main_guard
from rlx.rewards.triton.scopes import COMPREHENSIONS
from rlx.rewards.triton.vocabulary import (
    BANNED_BUILTINS,
    DENIED_NAMES,
    FOREIGN_PRIVATE,
    HARMLESS_DUNDERS,
    KERNEL_BUILTINS,
    importable,
    interpreter_globals,
    kernel_words,
)

NOT_IN_KERNELS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    *COMPREHENSIONS,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
    ast.Import,
    ast.ImportFrom,
    ast.Try,
    ast.With,
    ast.AsyncWith,
    ast.AsyncFor,
    ast.Global,
    ast.Nonlocal,
    ast.Match,  # Triton's frontend has no match statement; interpreted, a class pattern reads any attribute
)


class StaticResult(NamedTuple):
    checks: dict[str, bool]
    reason: str  # why the vocabulary refused the code, or ""
    kernels: frozenset[Key]  # (name, first line) of every kernel def
    writers: frozenset[Key]  # the kernels that write memory (themselves or through kernels they call)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@functools.cache
def _base_classes() -> tuple[type, ...]:
    # start-up time: the static check runs in processes that may never need torch (rlx.score on a bad row)
    import torch

    return torch.nn.Module, torch.autograd.Function


def _language_function(value: object) -> bool:
    """A Triton language function (tl.load, libdevice.exp, tl.cdiv): callable only inside a kernel."""
    # optional dependency: triton (Linux only)
    import triton.language as tl

    return callable(value) and not isinstance(value, (type, tl.dtype, tl.constexpr))


class _Check:
    def __init__(
        self, program: Program, constants: Collection[str], reserved: Collection[str], classes: Collection[str]
    ) -> None:
        self.p, self.constants, self.reserved, self.task_classes = program, set(constants), set(reserved), set(classes)
        module = program.tree.body
        self.top_level = {
            t.id for s in module if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
        }
        self.top_level |= {
            s.name for s in module if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        self.top_level |= {a.asname or a.name for s in module if isinstance(s, ast.ImportFrom) for a in s.names}
        self.top_level |= {
            a.asname or a.name.split(".")[0] for s in module if isinstance(s, ast.Import) for a in s.names
        }

    def statements(self, body: list[ast.stmt], kernel: bool = False, guarded: bool = False) -> None:
        for statement in body:
            self.node(statement, kernel, guarded)

    def node(self, node: ast.AST, kernel: bool, guarded: bool) -> None:
        if kernel and isinstance(node, NOT_IN_KERNELS):
            raise Refused(f"{type(node).__name__} inside a kernel")
        if kernel and isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            raise Refused("an item assignment inside a kernel (Triton stores through tl.store)")
        if isinstance(node, ast.If) and main_guard(node):
            self.statements(node.orelse, kernel, guarded)
            return
        if isinstance(node, ast.Try):
            self.statements(node.body, kernel, guarded or caught_import_errors(node.handlers))
            for part in [*node.handlers, *node.orelse, *node.finalbody]:
                self.node(part, kernel, guarded)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node, guarded)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, kernel, guarded)
            return
        if isinstance(node, ast.ClassDef):
            self.class_def(node)
        elif isinstance(node, ast.Name):
            self.name(node, kernel)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, kernel)
        elif isinstance(node, ast.Call):
            self.call(node, kernel)
        elif isinstance(node, ast.MatchClass):
            self.pattern(node)
        for child in ast.iter_child_nodes(node):
            self.node(child, kernel, guarded)

    def imports(self, node: ast.Import | ast.ImportFrom, guarded: bool) -> None:
        if isinstance(node, ast.ImportFrom) and (node.level or any(a.name == "*" for a in node.names)):
            raise Refused("a relative or star import")
        for alias in node.names:
            module = node.module if isinstance(node, ast.ImportFrom) else alias.name
            if not importable(module or ""):
                if guarded:
                    continue  # the harness makes it fail; the name is never bound
                raise Refused(f"import {module}")
            if isinstance(node, ast.ImportFrom):
                lookup(f"{module}.{alias.name}")  # refuses private, denied and metaclass names

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, kernel: bool, guarded: bool) -> None:
        in_class = isinstance(self.p.parents.get(id(node)), ast.ClassDef)
        if _dunder(node.name) and not (node.name == "__init__" and in_class):
            raise Refused(f"def {node.name}")
        for part in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults, node.returns]:
            if part is not None:
                self.node(part, kernel, guarded)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            if arg.annotation is not None:
                self.node(arg.annotation, kernel, guarded)
        self.statements(node.body, kernel or self.p.is_kernel(node), guarded)

    def class_def(self, node: ast.ClassDef) -> None:
        if node.keywords:
            raise Refused(f"class {node.name} with keywords (a metaclass)")
        for base in node.bases:
            if isinstance(base, ast.Name) and (self.p.class_named(base) or self._builtin(base, "object")):
                continue
            if isinstance(base, ast.Name) and base.id in self.task_classes and self._builtin(base, base.id):
                continue  # the task's own class (its Model), which the program does not rebind
            held = self.p.held(base)
            if not held or not all(
                h is not None and isinstance(h.value, type) and issubclass(h.value, _base_classes()) for h in held
            ):
                raise Refused(f"class {node.name}: bases other than nn.Module, torch.autograd.Function, its own")

    def _builtin(self, name: ast.Name, expected: str) -> bool:
        resolution, found = self.p.bindings(name)
        return name.id == expected and resolution.kind in ("global", "class") and not found

    def name(self, node: ast.Name, kernel: bool) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            if _dunder(node.id):
                raise Refused(f"binds {node.id}")
            return
        resolution, found = self.p.bindings(node)
        if resolution.kind in ("global", "class"):
            if _dunder(node.id) and node.id != "__name__":
                raise Refused(node.id)
            if node.id in BANNED_BUILTINS:
                raise Refused(f"name {node.id}")
            if node.id in interpreter_globals() and not self._imported_as_injected(node):
                raise Refused(f"name {node.id} (Triton's interpreter puts its own there)")
            if node.id in self.reserved and node.id not in self.top_level:
                raise Refused(f"the task's import {node.id} (import it in the program)")
        self.value_use(node, kernel)

    def _imported_as_injected(self, node: ast.Name) -> bool:
        """Whether every binding of the name is an import holding what the interpreter would copy there."""
        _, found = self.p.bindings(node)
        held = self.p.held(node)
        injected = interpreter_globals()[node.id]
        return bool(found) and len(held) == len(found) and all(h is not None and h.value is injected for h in held)

    def value_use(self, node: ast.Name | ast.Attribute, kernel: bool) -> None:
        """A module may only be the base of an attribute; a Triton language function only appear in a kernel."""
        held = [h for h in self.p.held(node) if h is not None]
        parent = self.p.parents.get(id(node))
        if any(h.module for h in held) and not (isinstance(parent, ast.Attribute) and parent.value is node):
            raise Refused(f"the module {held[0].path} used as a value")
        if kernel:
            if any(not h.path.startswith(("triton", "math.")) for h in held):
                raise Refused(f"{held[0].path} inside a kernel")
        elif isinstance(parent, ast.Call) and parent.func is node:  # an alias (`triton_tanh = libdevice.tanh`) is fine
            if any(h.path.startswith("triton.language") and _language_function(h.value) for h in held):
                raise Refused(f"{held[0].path} outside a kernel (Triton language functions run only in kernels)")

    def attribute(self, node: ast.Attribute, kernel: bool) -> None:
        attr, base, parent = node.attr, node.value, self.p.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        if _dunder(attr) and not (attr in HARMLESS_DUNDERS or (attr == "__init__" and called)):
            raise Refused(f".{attr}")
        if attr in DENIED_NAMES:
            raise Refused(f".{attr}")
        if not isinstance(node.ctx, ast.Load):
            if kernel or not (self._local_root(base) or self._own_class(base)):
                raise Refused(f"sets .{attr} of a module-level object or library (monkeypatching)")
            if attr.startswith("_") and not (self.p.own_instance(base) or self._own_class(base)):
                raise Refused(f"sets .{attr} of an object the program does not own")
            return
        held = self.p.held(node)  # raises Refused on a library's private or denied attribute
        if held and all(h is not None for h in held):
            self.value_use(node, kernel)
            return
        if attr.startswith("_") and not _dunder(attr) and attr not in FOREIGN_PRIVATE:
            own = self.p.own_instance(base) or self._own_class(base)
            if not (own and attr in self.p.own_attributes):
                raise Refused(f".{attr} of an object the program does not own")
        if self._own_class(base) and attr in self.p.methods:
            self_call = called and parent.args and self.p.own_instance(parent.args[0])  # type: ignore[union-attr]
            if not self_call:
                raise Refused(f"method {attr} taken from its class (its `self` could be anything)")
        if kernel and attr not in kernel_words():
            raise Refused(f".{attr} inside a kernel")

    def pattern(self, node: ast.MatchClass) -> None:
        """A class pattern reads the attributes it names (`case object(__globals__=g)` is `.__globals__`, bound to
        g): names, not ast.Attribute nodes, which the attribute rules never saw. What the subject is cannot be
        known, so no private or dunder name passes (a program's own included), nor a frame or handle name."""
        for attr in node.kwd_attrs:
            if attr.startswith("_") or attr in DENIED_NAMES:
                raise Refused(f"a class pattern reads .{attr}")
        # positional sub-patterns read the attributes the class's __match_args__ names, unseen here; the builtin
        # types (`case int(n)`) match the subject itself, the program's own classes are its own
        cls = node.cls
        own = isinstance(cls, ast.Name) and (self.p.class_named(cls) or self._builtin(cls, cls.id))
        if node.patterns and not own:
            raise Refused(f"a class pattern reads {ast.unparse(cls)[:40]}'s attributes by position")

    def _local_root(self, node: ast.AST) -> bool:
        """Whether an attribute chain starts at a function's own variable (`self.a.b`, `ctx`, `out`): what it
        holds is the runtime account's to judge; a chain from a module-level name or an import is not."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and self.p.bindings(node)[0].kind in ("local", "free")

    def _own_class(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and self.p.class_named(node)

    def call(self, node: ast.Call, kernel: bool) -> None:
        func = node.func
        if isinstance(func, ast.Name) and self._builtin(func, "super") and node.args:
            first, second = node.args[0], node.args[1] if len(node.args) > 1 else None
            own = second is not None and self.p.own_instance(second)
            if not (isinstance(first, ast.Name) and self.p.class_named(first) and own):
                raise Refused("super() of another class or object than the method's own")
        if not kernel:
            return
        if isinstance(func, ast.Attribute):
            return  # tl.* and Triton value methods: decided by the attribute rules
        if isinstance(func, ast.Name):
            resolution, found = self.p.bindings(func)
            if resolution.kind in ("global", "class"):
                if not found and func.id in KERNEL_BUILTINS:
                    return
                kernels = [b for b in found if isinstance(b, ast.FunctionDef) and self.p.is_kernel(b)]
                imports = [b for b in found if isinstance(b, (ast.Import, ast.ImportFrom))]
                held = [h for h in self.p.held(func) if h is not None]  # an import that does not resolve binds nothing
                if (
                    found
                    and len(kernels) + len(imports) == len(found)
                    and all(h.path.startswith("triton") for h in held)
                ):
                    return
                aliased = self.p.aliases(func)  # triton_tanh = libdevice.tanh (unsloth's utils)
                if aliased and all(h.path.startswith("triton.language.") for h in aliased):
                    return
        raise Refused(f"a kernel calls {ast.unparse(func)[:60]} (only tl.*, kernels and a few builtins)")


@functools.lru_cache(maxsize=4096)  # a task file is scored many times per step
def task_names(source: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """What the program may read of the task file's module-level names (it runs in a copy of the task's
    namespace; the harness takes the task's own `Model`, `get_inputs` and `get_init_inputs` from the task, so a
    program's rebinding changes none of them): (names bound by assignment (ROWS, COLS) or def (Model,
    get_inputs): readable; the names its imports bind (`np` of `import numpy as np`): not, unless the program
    imports them itself, since they reach modules the program may not import; its classes (`Model`): also
    usable as a base class, as `class ModelNew(Model)` reuses the reference's constructor)."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(), frozenset(), frozenset()
    readable = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    readable |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    imported = {
        a.asname or a.name.split(".")[0]
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    return frozenset(readable), frozenset(imported - readable), frozenset(classes)


def static_checks(
    code: str, constants: Collection[str] = (), reserved: Collection[str] = (), classes: Collection[str] = ()
) -> StaticResult:
    """The static checks of `code`; `constants`, `reserved`, `classes`: the task file's names a program may read,
    may not read (its imports), and may subclass (task_names). Never raises on any text: a parser that gives up
    (RecursionError, MemoryError on deep nesting) reads as not parsing."""
    checks = dict.fromkeys(
        ("parses", "defines_model_new", "defines_jit_kernel", "loads_and_stores", "vocabulary"), False
    )
    kernels: frozenset[Key] = frozenset()
    writers: frozenset[Key] = frozenset()
    try:
        tree = syntax.parse(code)
        checks["parses"] = True
        checks["defines_model_new"] = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
        program = Program(tree)
        kernels = frozenset(program.kernels)
        writers = frozenset(calling(program, WRITES))
        checks["defines_jit_kernel"] = bool(kernels)
        checks["loads_and_stores"] = bool(writers & calling(program, LOADS | WRITES - {"store"}))
        _Check(program, constants, reserved, classes).statements(tree.body)
    except Refused as refused:
        return StaticResult(checks, f"refused by the static check: {str(refused)[:160]}", kernels, writers)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        checks["parses"] = False
        return StaticResult(checks, "", kernels, writers)
    checks["vocabulary"] = True
    return StaticResult(checks, "", kernels, writers)
