"""reward=triton's static checks, run in the checker on the completion's text (never on its objects).

Checks (`details["checks"]`): parses, defines_model_new, defines_jit_kernel (KernelBench/TritonRL's syntax
check), loads_and_stores (some @triton.jit kernel calls both tl.load and tl.store), and `vocabulary`: the
program uses only the words a kernel launcher needs. Every in-process check (the torch allow-list, launch
counting, canaries) lives in the candidate's own process, where any Python that can reach its state could
change it; the vocabulary is what keeps that state out of reach, and it is decided here, where the candidate
cannot touch it. It refuses:
  * any name or attribute starting with `_` (except `__init__`): no `__closure__`, `__globals__`, `__class__`,
    `torch._C`, mode stacks, private helpers, flags on objects the harness owns;
  * imports other than torch, torch.nn, triton, triton.language and math (no os, sys, threading, ctypes, numpy,
    gc, inspect, importlib: no second thread outside the guard, no pipe to write, no frames);
  * builtins outside a short list (no getattr/setattr/vars/globals/eval/exec/compile/open/type/memoryview);
  * `torch.X`, `nn.X`, `triton.X` outside the allocation/launch words below (no torch compute, no
    torch.library, torch.overrides, torch.initial_seed, no RNG), `tl.X` that names a module (tl.core...), and
    `a.b.c` chains on modules;
  * attributes of other objects outside the tensor-shape/launch words, except the program's own attributes
    read through `self` or one of its classes;
  * the task file's names other than its constants (`Model`, `get_inputs`: calling the reference is a
    fallback) and Python's builtins outside the list (a name that exists nowhere is left to fail at run time,
    a CRASH, as a garbled name is no attack);
  * classes other than `nn.Module` subclasses (no torch.Tensor subclass computing when it is encoded), and
    inside a kernel, calls of anything but tl.*, other kernels and range (under TRITON_INTERPRET=1 a kernel's
    body is Python: a helper called from it would run unchecked).
KernelBench-style answers for elementwise and row operations need none of what is refused. A completion
that trips the vocabulary is a VIOLATION with the first offending word in `details["reason"]`.
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from collections.abc import Collection

MODULES = {"torch", "torch.nn", "triton", "triton.language", "math"}
TORCH = {
    "empty",
    "empty_like",
    "zeros",
    "zeros_like",
    "empty_strided",
    "nn",
    "Tensor",
    "Size",
    "device",
    "dtype",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "float",
    "half",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "long",
    "int",
    "bool",
}
NN = {"Module", "Parameter"}
TRITON = {"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language"}
MATH = {"ceil", "floor", "log2", "sqrt", "pi", "e", "inf", "prod"}
# methods and properties on tensors and plain values in host code: shapes, views, allocation, list building
HOST_ATTRIBUTES = {
    "shape",
    "dtype",
    "device",
    "size",
    "stride",
    "numel",
    "dim",
    "ndim",
    "contiguous",
    "is_contiguous",
    "view",
    "reshape",
    "flatten",
    "unsqueeze",
    "squeeze",
    "element_size",
    "new_empty",
    "new_zeros",
    "is_cuda",
    "append",
    "extend",
    "items",
    "keys",
    "values",
    "constexpr",
}
BUILTINS = {
    "range",
    "len",
    "min",
    "max",
    "abs",
    "int",
    "float",
    "bool",
    "tuple",
    "list",
    "dict",
    "isinstance",
    "enumerate",
    "zip",
    "super",
    "print",
    "round",
    "divmod",
    "pow",
    "sum",
    "all",
    "any",
    "map",
    "sorted",
    "reversed",
    "True",
    "False",
    "None",
    "Exception",
    "ValueError",
    "RuntimeError",
    "TypeError",
    "AssertionError",
    "NotImplementedError",
}
PYTHON_BUILTINS = set(dir(builtins))
DECORATORS = {"staticmethod", "classmethod", "property"}
KERNEL_CALLS = {"range", "min", "max", "int", "float", "len"}


@functools.cache
def _tl_words() -> set[str]:
    # optional dependency: triton (Linux only)
    import triton.language as tl

    return {n for n in dir(tl) if not n.startswith("_") and not isinstance(getattr(tl, n), types.ModuleType)}


@functools.cache
def _tensor_words() -> set[str]:
    # optional dependency: triton (Linux only)
    import triton.language as tl

    return {n for n in dir(tl.tensor) if not n.startswith("_")}


class Refused(Exception):
    """The first word outside the vocabulary."""


class _Scan:
    """One pass over the candidate's AST with the names it binds; `check` raises Refused."""

    def __init__(self, nodes: list[ast.AST], constants: Collection[str], reserved: Collection[str]) -> None:
        self.modules: dict[str, str] = {}  # local name -> module it binds
        self.bound: set[str] = set(constants)
        self.reserved = (set(reserved) | PYTHON_BUILTINS) - BUILTINS - self.bound
        self.own_attributes: set[str] = set()
        self.classes: set[str] = set()
        self.kernels: set[str] = set()
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
                if isinstance(node, ast.ClassDef):
                    self.classes.add(node.name)
                    self.own_attributes |= {
                        n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    }
                    assigned = [t for n in node.body if isinstance(n, ast.Assign) for t in n.targets]
                    self.own_attributes |= {t.id for t in assigned if isinstance(t, ast.Name)}
                elif is_kernel(node):
                    self.kernels.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                self.own_attributes.add(node.attr)
        self.tl, self.tensor = _tl_words(), _tensor_words()

    def check(self, tree: ast.Module) -> None:
        for node in tree.body:
            self.statement(node, in_kernel=False)

    def statement(self, node: ast.AST, in_kernel: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node)
            return
        if isinstance(node, ast.ClassDef):
            if node.keywords or node.decorator_list:
                raise Refused(f"class {node.name} with decorators or keywords")
            if [self.dotted(b) for b in node.bases] not in (["nn.Module"], ["torch.nn.Module"]):
                raise Refused(f"class {node.name} must subclass nn.Module only")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kernel = is_kernel(node)
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if not (kernel or self.dotted(target) in DECORATORS):
                    raise Refused(f"decorator {self.dotted(target)}")
                self.expression(dec, in_kernel)
            if node.name.startswith("_") and node.name != "__init__":
                raise Refused(node.name)
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                self.expression(default, in_kernel)
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                if arg.annotation is not None:
                    self.expression(arg.annotation, in_kernel)
            for line in node.body:
                self.statement(line, in_kernel or kernel)
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statement(child, in_kernel)
            elif isinstance(child, ast.expr):
                self.expression(child, in_kernel)
            elif isinstance(child, ast.AST):  # handlers, comprehensions' generators, withitems, keywords
                self.statement(child, in_kernel)

    def imports(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in MODULES:
                    raise Refused(f"import {alias.name}")
                if alias.asname:
                    self.modules[alias.asname] = alias.name
                else:
                    self.modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            return
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if full in MODULES:
                self.modules[alias.asname or alias.name] = full
            elif module in MODULES and alias.name in self.words(module):
                self.bound.add(alias.asname or alias.name)
            else:
                raise Refused(f"from {module} import {alias.name}")

    def words(self, module: str) -> set[str]:
        return {"torch": TORCH, "torch.nn": NN, "triton": TRITON, "triton.language": self.tl, "math": MATH}[module]

    def dotted(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return f"{self.dotted(node.value)}.{node.attr}"
        return "?"

    def module_of(self, node: ast.AST) -> str | None:
        """The module an expression names (`torch`, `torch.nn` for `torch.nn` or `nn`, ...), else None."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            if parent is not None and f"{parent}.{node.attr}" in MODULES:
                return f"{parent}.{node.attr}"
        return None

    def expression(self, node: ast.AST, in_kernel: bool) -> None:
        if isinstance(node, ast.Name):
            self.name(node)
            return
        if isinstance(node, ast.Attribute):
            self.attribute(node, in_kernel)
            return
        if isinstance(node, ast.Call) and in_kernel:
            func = node.func
            callee = self.module_of(func.value) if isinstance(func, ast.Attribute) else None
            plain = isinstance(func, ast.Name) and (func.id in self.kernels or func.id in KERNEL_CALLS)
            method = isinstance(func, ast.Attribute) and callee is None and func.attr in self.tensor
            if not (plain or method or callee in ("triton.language", "triton")):
                raise Refused(f"kernel calls {self.dotted(func)} (only tl.*, kernels and range run in a kernel)")
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expression(child, in_kernel)
            elif isinstance(child, ast.AST):
                self.statement(child, in_kernel)

    def name(self, node: ast.Name) -> None:
        if node.id.startswith("_"):
            raise Refused(node.id)
        if node.id in self.modules:
            if isinstance(node.ctx, ast.Load):
                raise Refused(f"module {node.id} used as a value")
            return
        if node.id in self.reserved and node.id not in self.bound:
            raise Refused(f"name {node.id}")

    def attribute(self, node: ast.Attribute, in_kernel: bool) -> None:
        if node.attr.startswith("_") and not (node.attr == "__init__" and self.dotted(node.value) == "super"):
            raise Refused(f".{node.attr}")
        module = self.module_of(node.value)
        if module is not None:
            if f"{module}.{node.attr}" not in MODULES and node.attr not in self.words(module):
                raise Refused(f"{module}.{node.attr}")
            return
        if isinstance(node.value, ast.Attribute) and self.module_of(node.value.value) is not None:
            raise Refused(f"{self.dotted(node)}")  # torch.float32.x, triton.jit.x: no chains through modules
        owner = node.value
        own = isinstance(owner, ast.Name) and (owner.id == "self" or owner.id in self.classes)
        allowed = HOST_ATTRIBUTES | (self.tensor if in_kernel else set())
        if not (node.attr in allowed or (own and node.attr in self.own_attributes)):
            raise Refused(f".{node.attr}")
        if isinstance(owner, ast.Call) and self.dotted(owner.func) == "super":
            return
        self.expression(owner, in_kernel)


def is_kernel(node: ast.AST) -> bool:
    """Whether a function definition is decorated @triton.jit (or @jit, @triton.jit(...))."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "jit":
            return True
        if isinstance(target, ast.Name) and target.id == "jit":
            return True
    return False


@functools.lru_cache(maxsize=4096)  # a task file is scored many times per step
def task_names(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the names the task file binds by plain assignment at module level (ROWS, COLS): a program may read
    them; every other name it binds at module level (Model, get_inputs): a program may not)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(), frozenset()
    constants = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    others = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    others |= {
        a.asname or a.name.split(".")[0]
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return frozenset(constants), frozenset(others - constants)


def static_checks(
    code: str, constants: Collection[str] = (), reserved: Collection[str] = ("Model", "get_inputs", "get_init_inputs")
) -> tuple[dict[str, bool], str]:
    """(checks, why the vocabulary refused the code, or ""); `constants`, `reserved`: the task file's names a
    program may and may not use (task_names). Never raises on any text: a parser that gives up
    (RecursionError, MemoryError on deep nesting) reads as not parsing."""
    checks = {
        "parses": False,
        "defines_model_new": False,
        "defines_jit_kernel": False,
        "loads_and_stores": False,
        "vocabulary": False,
    }
    try:
        tree = ast.parse(code)
        checks["parses"] = True
        checks["defines_model_new"] = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
        nodes = list(ast.walk(tree))  # walked once: the scan below reads the same list
        kernels = [n for n in nodes if is_kernel(n)]
        checks["defines_jit_kernel"] = bool(kernels)
        checks["loads_and_stores"] = any({"load", "store"} <= memory_calls(k) for k in kernels)
        _Scan(nodes, constants, reserved).check(tree)
    except Refused as refused:
        return checks, f"outside the kernel vocabulary: {str(refused)[:120]}"
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        checks["parses"] = False
        return checks, ""
    checks["vocabulary"] = True
    return checks, ""


def memory_calls(kernel: ast.AST) -> set[str]:
    """Which of tl.load / tl.store a kernel's body calls."""
    return {
        node.func.attr
        for node in ast.walk(kernel)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("load", "store")
    }
