"""The static check's tables (rlx.rewards.triton.static reads them; the sandboxed harness enforces IMPORTS and
BANNED_BUILTINS a second time at run time, rlx.rewards.triton.launches).

They name only what the static check must decide because no runtime record can: what reaches the harness's
state, frames, files, processes, threads or Triton's interpreter internals from inside the candidate's process.
Torch compute is not listed anywhere: the runtime account (rlx.rewards.triton.account) sees every ATen op.
"""

from __future__ import annotations

import builtins
import functools

# Modules a program may import (and their submodules, minus DENIED_MODULES). `__future__` is a compiler switch.
IMPORTS = (
    "torch",
    "triton",
    "math",
    "typing",
    "typing_extensions",
    "functools",
    "itertools",
    "operator",
    "dataclasses",
    "collections",
    "warnings",
    "numbers",
    "__future__",
)
# Submodules (by canonical name, prefix match) that reach dispatch machinery, op registration, other threads,
# graph capture, files or compilers: none of them computes a kernel.
DENIED_MODULES = (
    "torch.library",
    "torch.utils",
    "torch.overrides",
    "torch.jit",
    "torch.hub",
    "torch.fx",
    "torch.export",
    "torch.func",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.package",
    "torch.serialization",
    "torch.futures",
    "torch.profiler",
    "torch.monitor",
    "torch.compiler",
    "torch.onnx",
    "torch.ops",
    "torch.classes",
    "torch.cuda.graphs",
    "torch.cuda.jiterator",
    "torch.cuda.memory",
    "torch.autograd.profiler",
    "triton.runtime.interpreter",
    "triton.runtime.build",
    "triton.runtime.cache",
    "triton.knobs",
    "triton.compiler",
    "triton.backends",
    "triton.tools.disasm",
    "triton.experimental",
    "triton.profiler",
    "collections.abc",
)
# Non-module attributes of allowed modules that run code elsewhere, capture and replay kernels, write files,
# build classes from strings (a dunder method named in a dict would pass every AST check), evaluate strings
# (string annotations: get_type_hints, singledispatch) or read attributes named by strings (attrgetter).
DENIED_ATTRIBUTES = {
    "torch": {"compile", "vmap", "cond", "while_loop", "save", "load", "from_file", "ops", "library"},
    "torch.cuda": {"graph", "CUDAGraph", "make_graphed_callables", "graphs", "jiterator", "memory"},
    "triton": {"compile", "set_allocator", "knobs"},
    "dataclasses": {"make_dataclass"},
    "functools": {"update_wrapper", "singledispatch", "singledispatchmethod"},
    "operator": {"attrgetter", "methodcaller"},
    "typing": {"get_type_hints", "ForwardRef", "evaluate_forward_ref"},
    "typing_extensions": {"get_type_hints", "ForwardRef", "evaluate_forward_ref", "get_annotations"},
    "collections": {"abc"},
}
# Builtins that reach names by strings, frames, files, code or new classes. Refused wherever Python would look
# them up among the builtins (a module-level or class-level binding falls through when it never ran), and
# removed from the candidate's builtins at run time.
BANNED_BUILTINS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "input",
        "breakpoint",
        "help",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "memoryview",
        "type",
        "id",
        "exit",
        "quit",
    }
)
PYTHON_BUILTINS = frozenset(dir(builtins))
# Dunder attributes that only read a name or a docstring; `.__init__` is allowed as the callee of a call.
HARMLESS_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})
# Attribute names that lead to frames, code objects, raw pointers or Triton's interpreter handles, on any object.
DENIED_NAMES = frozenset(
    {
        "f_back",
        "f_locals",
        "f_globals",
        "f_builtins",
        "f_code",
        "f_trace",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "cell_contents",
        "handle",
        "ctypes",
        "rewritten_fn",
        "rewriter",
    }
)
# Foreign private attributes that Triton's own tutorials call (02: `kernel._init_handles()` on a compiled kernel).
FOREIGN_PRIVATE = frozenset({"_init_handles"})
# Python builtins a kernel body may call (Triton's frontend accepts them; tl.* and the program's kernels aside).
KERNEL_BUILTINS = frozenset({"range", "min", "max", "int", "float", "bool", "len", "print", "isinstance", "abs"})
# Instance attributes of Triton values (not in dir() of their classes) that kernels read.
KERNEL_ATTRIBUTES = frozenset(
    {"dtype", "shape", "type", "element_ty", "numel", "value", "primitive_bitwidth", "block_shape", "name", "scalar"}
)


@functools.cache
def kernel_words() -> frozenset[str]:
    """Public attributes of Triton's language values (tl.tensor, dtypes, descriptors, constexpr, tuples)."""
    # optional dependency: triton (Linux only)
    import triton.language as tl

    classes = (tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr, tl.tensor_descriptor, tl.tuple)
    return frozenset(n for cls in classes for n in dir(cls) if not n.startswith("_")) | KERNEL_ATTRIBUTES


@functools.cache
def interpreter_globals() -> dict[str, object]:
    """Names Triton's interpreter copies into a kernel's globals (the program's namespace) when it rewrites the
    kernel (triton/runtime/interpreter.py FunctionRewriter), with their values: a program naming one that it
    did not bind would reach the interpreter's builder, numpy or inspect. Left out: the modules a program
    imports anyway (torch, triton, triton.language, math) and typing's and functools' harmless objects."""
    # optional dependency: triton (Linux only)
    import math
    import typing

    import torch
    import triton
    import triton.language as tl
    import triton.runtime.interpreter as interpreter

    def harmless(value: object) -> bool:
        if any(value is m for m in (torch, triton, tl, math)):
            return True
        return getattr(value, "__module__", None) in ("typing", "functools") or isinstance(value, typing.TypeVar)

    return {k: v for k, v in vars(interpreter).items() if not harmless(v) and not k.startswith("__")}


def importable(name: str) -> bool:
    """Whether a program may import module `name` (a dotted name)."""
    root = name.split(".")[0]
    if root not in IMPORTS or any(part.startswith("_") for part in name.split(".")[1:]):
        return False
    return not any(name == d or name.startswith(d + ".") for d in DENIED_MODULES)
