"""What the harness changes in the candidate's process before any candidate code runs: wrappers around
Triton's launch entry points that record every launch, wrappers on torch.Tensor's dispatch-bypassing readers,
the program's builtins (no eval/getattr/open..., imports only from the allow-list), and under TRITON_INTERPRET
a CPU driver whose benchmarker makes `triton.autotune` deterministic.

The records live in a `Session` the harness holds; the wrappers reach it through their closures, which the
program cannot name (rlx.rewards.triton.static refuses dunders, frames and the harness's modules).

Launches (`Launches`, one per forward): every JITFunction.run / InterpretedFunction.run (what `k[grid](...)`
calls, under autotune and heuristics too) counts, with the kernel's identity (its function's name and first
line, from its code object: the checker matches it against the program's kernel defs), its integer keyword
arguments (the plan's block), and the storages of the tensors passed to it (output provenance). Refused at the
launch: an argument with `data_ptr` that is not exactly a tensor, a tensor passed as a `tl.constexpr` (under the
interpreter it would reach the kernel body as a host tensor), and a @triton.jit function called outside a
kernel body (the interpreter would run it as Python without a launch). Under the interpreter a callable grid
is evaluated here, before the launch, on the arguments as a compiled launch passes them: inside the
interpreter's launch triton.language runs on the host, and a grid callable there could run kernel code outside
any kernel. Autotuner.run and Heuristics.run are wrapped too, as roots of the Triton-only call chains the
account exempts (rlx.rewards.triton.account).

On a CPU (TRITON_INTERPRET=1), Triton has no driver and its autotuner cannot benchmark ("0 active drivers"):
`InterpreterDriver` answers for it. Its benchmarker times nothing and reports every config alike, so the
autotuner keeps the first config left after `prune_configs_by` (early_config_prune, perf_model), and its
reset_to_zero / restore_value hooks run as on a GPU. `get_active_torch_device()` is the emulated cuda:0 whose
memory is the host's (rlx.rewards.triton.emulation), `get_current_target()` CUDA sm_90, and
`utils.get_device_properties()` nominal values (NOMINAL_DEVICE);
`kernel.warmup(...)` (which the interpreter lacks) returns a handle with nominal compiled metadata whose
`handle[grid](...)` launches the interpreted kernel, so host code that sizes persistent grids from occupancy
(Triton's tutorial 02) runs as written. A Python float passed to a kernel reaches its body as an fp32 scalar
tensor, as a compiled kernel receives it (Triton 3.9's interpreter passes it on as a bare float, on which
Liger-Kernel's `eps.to(tl.float32)` fails). None of these numbers can change a result a correct kernel computes;
speed is not measured on a CPU. Every load, store and atomic of an interpreted kernel is bounds-checked against
the storages of its launch's tensors (rlx.rewards.triton.memory). On a GPU nothing here changes how Triton
compiles, launches or benchmarks.
"""

from __future__ import annotations

import builtins
import dis
import inspect
import os
import sys
from dataclasses import dataclass, field
from types import CodeType

import torch

from rlx.rewards.triton import account, libdevice, memory
from rlx.rewards.triton.emulation import DEVICE
from rlx.rewards.triton.tensors import storage_ptr
from rlx.rewards.triton.vocabulary import BANNED_BUILTINS, IMPORTS, importable

CANDIDATE_FILE = "<candidate>"
LANGUAGE_DIR = os.path.join(account.TRITON_DIR, "language") + os.sep  # tl.tensor's methods call Triton's jit functions
_IMPORT_OPS = {dis.opmap["IMPORT_NAME"]: "import", dis.opmap["IMPORT_FROM"]: "from"}


@dataclass
class Launches:
    """One forward's launches."""

    count: int = 0
    first: list[tuple[str, int, dict]] = field(default_factory=list)  # (kernel, line, int keywords), first 8
    kernels: set[tuple[str, int]] = field(default_factory=set)
    storages: set[int] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)


class Session:
    """The harness's handle on the current forward: its account and its launches (None between forwards), and
    what the classes the harness and Triton's launch path rely on looked like before any candidate code ran."""

    def __init__(self) -> None:
        self.account: account.Account | None = None
        self.launches: Launches | None = None
        self.kernel_codes: set[CodeType] = set()  # bodies of kernels running or called from one
        self.classes: dict[type, dict[str, object]] = {}
        self.spans = None  # the storages the running interpreted launch may touch (rlx.rewards.triton.memory)
        self.faults: list[str] = []  # out-of-bounds accesses refused since the harness last read them

    def changed_class(self) -> str | None:
        """The first attribute of a watched class the program set, replaced or deleted (monkeypatching), or None."""
        for cls, before in self.classes.items():
            now = vars(cls)
            if now.keys() != before.keys() or any(now[k] is not v for k, v in before.items()):
                changed = sorted(set(now) ^ set(before)) or [k for k, v in before.items() if now[k] is not v]
                return f"{cls.__name__}.{changed[0]}"
        return None


def _plain(value: object) -> bool:
    return type(value) in account.PLAIN


def _constexprs(fn) -> set[str]:
    # optional dependency: triton (Linux only)
    from triton.runtime.jit import _normalize_ty

    try:
        annotations = dict(getattr(fn, "__annotations__", {}))
    except Exception:  # noqa: BLE001
        return set()
    return {name for name, kind in annotations.items() if _normalize_ty(kind) == "constexpr"}


def _note(launches: Launches, kernel, args: tuple, kwargs: dict) -> None:
    """Records one launch; appends to `launches.refused` what the harness does not let a launch carry."""
    # optional dependency: triton (Linux only)
    from triton.runtime.jit import TensorWrapper
    from triton.tools.tensor_descriptor import TensorDescriptor

    fn = getattr(kernel, "fn", None)
    code = getattr(fn, "__code__", None)
    own = isinstance(code, CodeType) and code.co_filename == CANDIDATE_FILE
    key = (code.co_name, code.co_firstlineno) if own and isinstance(code, CodeType) else ("?", -1)
    launches.count += 1
    launches.kernels.add(key)
    if len(launches.first) < 8:
        ints = {k: v for k, v in kwargs.items() if type(v) is int and k not in ("grid", "warmup")}
        launches.first.append((key[0], key[1], ints))
    values = [*args, *(v for k, v in kwargs.items() if k not in ("grid", "warmup"))]
    while values:
        value = values.pop()
        if isinstance(value, tuple):
            values.extend(value)
        elif isinstance(value, TensorDescriptor):
            values.append(value.base)
        elif isinstance(value, TensorWrapper):
            values.append(value.base)
        elif _plain(value):
            launches.storages.add(storage_ptr(value))
        elif hasattr(value, "data_ptr"):
            launches.refused.append(f"a {type(value).__name__} passed to kernel {key[0]} as a tensor")
    names = list(getattr(kernel, "arg_names", ())) or [p.name for p in getattr(kernel, "params", ())]
    bound = {**dict(zip(names, args, strict=False)), **kwargs}  # fewer args than parameters: defaults
    for name in _constexprs(fn) if fn is not None else ():
        if isinstance(bound.get(name), torch.Tensor):
            launches.refused.append(f"a tensor passed to kernel {key[0]} as tl.constexpr {name}")


def _body(session: Session, kernel) -> None:
    """Knows the interpreted body of a program's kernel being launched (in forward or not: a kernel launched while
    the model is built may call Triton's jit functions too), so that it may call jit functions."""
    code = getattr(getattr(kernel, "fn", None), "__code__", None)
    rewrite = getattr(kernel, "rewrite", None)
    if isinstance(code, CodeType) and code.co_filename == CANDIDATE_FILE and rewrite is not None:
        session.kernel_codes.add(rewrite().__code__)


def install(session: Session) -> None:
    """Wraps Triton's launch entry points (once per process, before any candidate code)."""
    # optional dependency: triton (Linux only)
    import triton.runtime.autotuner as autotuner
    import triton.runtime.interpreter as interpreter
    import triton.runtime.jit as jit

    for cls in (jit.JITFunction, interpreter.InterpretedFunction):
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            launches = session.launches
            if launches is not None:
                _note(launches, self, args, kwargs)
            _body(session, self)
            if isinstance(self, interpreter.InterpretedFunction) and callable(kwargs.get("grid")):
                kwargs["grid"] = _grid(self, args, kwargs)
            outer = session.spans
            try:
                return _original(self, *args, **kwargs)
            finally:
                session.spans = outer  # this launch's storages end with it

        cls.run = run
        account.ROOTS.add(run.__code__)
    for cls in (autotuner.Autotuner, autotuner.Heuristics):
        original = cls.run

        def root(self, *args, _original=original, **kwargs):
            return _original(self, *args, **kwargs)

        cls.run = root
        account.ROOTS.add(root.__code__)
    device_call = interpreter.InterpretedFunction.__call__

    def call(self, *args, **kwargs):
        caller = sys._getframe(1).f_code
        if caller not in session.kernel_codes and not caller.co_filename.startswith(LANGUAGE_DIR):
            if session.launches is not None:
                session.launches.refused.append(f"kernel {self.fn.__name__} called as a Python function")
            raise RuntimeError(f"@triton.jit function {self.fn.__name__} called outside a kernel")
        session.kernel_codes.add(self.rewrite().__code__)
        return device_call(self, *args, **kwargs)

    interpreter.InterpretedFunction.__call__ = call
    account.TRANSPARENT.add(call.__code__)
    _guard_readers(session)
    watched = [torch.Tensor, torch.nn.Module, torch.nn.Parameter, torch.UntypedStorage, torch.autograd.Function]
    watched += [jit.JITFunction, jit.KernelInterface, interpreter.InterpretedFunction, interpreter.GridExecutor]
    watched += [autotuner.Autotuner, autotuner.Heuristics, autotuner.Config, interpreter.InterpreterBuilder]
    if interpreting():
        # optional state: Triton's driver module probes for a GPU on import; only the interpreter's is wanted
        from triton.runtime.driver import driver

        memory.install(session)
        libdevice.install()
        driver.set_active(_interpreter_driver())
        interpreter.InterpretedFunction.warmup = lambda self, *args, grid, **kwargs: _WarmedKernel(self, kwargs)
        interpreter._implicit_cvt = _floats_as_fp32(interpreter._implicit_cvt)
    session.classes = {cls: dict(vars(cls)) for cls in watched}


def _grid(kernel, args: tuple, kwargs: dict) -> tuple:
    """A callable grid evaluated before the interpreter launches, on the arguments as a compiled launch passes
    them (ints and tensors, defaults filled in). Triton's interpreter calls it inside its launch, where
    triton.language is patched to run on the host: a grid callable there could run kernel code outside any
    kernel."""
    names = {*inspect.getfullargspec(kernel.fn).args, *inspect.getfullargspec(kernel.fn).kwonlyargs}
    meta = inspect.getcallargs(kernel.fn, *args, **{k: v for k, v in kwargs.items() if k in names})
    return tuple(kwargs["grid"](meta))


def _guard_readers(session: Session) -> None:
    """torch.Tensor's dispatch-bypassing readers, refused from the program's code during a forward, wherever
    they are called from (also inside torch's own Python functions, which the CallGuard mode cannot see)."""
    for name in sorted(account.READERS):
        original = getattr(torch.Tensor, name, None)
        if original is None:
            continue

        def reader(self, *args, _original=original, _name=name, **kwargs):
            recording = session.account
            if recording is not None:
                frame = sys._getframe(1)
                if account.origin(frame, recording) == account.PROGRAM:
                    raise recording.refuse(f"Tensor.{_name}", frame)
            return _original(self, *args, **kwargs)

        setattr(torch.Tensor, name, reader)
        account.TRANSPARENT.add(reader.__code__)
        account.GUARDED_READERS[name] = reader


def _floats_as_fp32(convert):
    """The interpreter's argument conversion, with Python floats made fp32 scalars as the compiler types them."""
    # optional dependency: triton (Linux only)
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def implicit_cvt(arg):
        if type(arg) is float:
            return tl.tensor(TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return convert(arg)

    return implicit_cvt


def interpreting() -> bool:
    # optional dependency: triton (Linux only)
    import triton

    return bool(triton.knobs.runtime.interpret)


# What the interpreter driver reports for a CPU "device" (an H100-like SM; only grid sizes follow from them).
NOMINAL_DEVICE = {
    "multiprocessor_count": 4,
    "max_num_regs": 65536,
    "max_shared_mem": 232448,
    "warpSize": 32,
    "max_threads_per_sm": 2048,
}
NOMINAL_KERNEL = {"n_regs": 32, "n_spills": 0, "shared": 16384}


class _WarmedKernel:
    """What `kernel.warmup(...)` returns under the interpreter: nominal compiled metadata, and a launch."""

    def __init__(self, kernel, options: dict) -> None:
        self.kernel, self.n_regs, self.n_spills = kernel, NOMINAL_KERNEL["n_regs"], NOMINAL_KERNEL["n_spills"]
        self.metadata = _Metadata(NOMINAL_KERNEL["shared"], options.get("num_warps", 4), options.get("num_stages", 3))

    def _init_handles(self) -> None:
        return None

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.kernel.run(*args, grid=grid, warmup=False, **kwargs)


@dataclass(frozen=True)
class _Metadata:
    shared: int
    num_warps: int
    num_stages: int


def _interpreter_driver():
    # optional dependency: triton (Linux only)
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    def alike(kernel_call, quantiles=None, **_):
        return [0.0] * len(quantiles) if quantiles else 0.0

    class Utils:
        @staticmethod
        def get_device_properties(device=None):
            return dict(NOMINAL_DEVICE)

    class InterpreterDriver(DriverBase):
        """Triton's driver under TRITON_INTERPRET=1 on a CPU (see the module docstring)."""

        @classmethod
        def is_active(cls):
            return True

        def map_python_to_cpp_type(self, ty):
            raise NotImplementedError("no compiled launcher under TRITON_INTERPRET")

        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)  # the emulated device: an H100-like SM (rlx.rewards.triton.emulation)

        def get_active_torch_device(self):
            return DEVICE  # the emulated CUDA device whose memory is the host's (rlx.rewards.triton.emulation)

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            return None

        def get_current_stream(self, device=None):
            return 0

        def get_benchmarker(self):
            return alike

        def get_device_interface(self):
            return torch.cpu

        utils = Utils()

    return InterpreterDriver()


def candidate_builtins() -> dict:
    """The program's builtins: without the banned ones, and an `__import__` that admits only the allow-list
    (an import of anything else fails as a missing module would, so `except ImportError` works as written).
    C code imports through the innermost Python frame's builtins too (torch's lazy imports while the program's
    frame is on top): an import that is not the program's own `import` statement may load the allowed
    packages' private submodules."""
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        frame = sys._getframe(1)
        statement = _IMPORT_OPS.get(frame.f_code.co_code[frame.f_lasti]) is not None
        allowed = importable(name) if statement else name.split(".")[0] in IMPORTS
        if level or not allowed:
            raise ModuleNotFoundError(f"No module named {name!r} (not importable in a kernel program)", name=name)
        for item in (fromlist or ()) if statement else ():
            if item != "*" and item.startswith("_") and not importable(f"{name}.{item}"):
                raise ImportError(f"cannot import name {item!r} from {name!r}")
        return real_import(name, globals, locals, fromlist, level)

    table = {k: v for k, v in vars(builtins).items() if k not in BANNED_BUILTINS}
    table["__import__"] = guarded_import
    return table
