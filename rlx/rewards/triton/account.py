"""The runtime account of ModelNew.forward: every ATen op it runs, who issued it, and a verdict per op.

Installed by the harness around the forward (rlx.rewards.triton.harness), in the candidate's process, as two
torch modes held by the harness (the program can name neither: rlx.rewards.triton.static):
  * `DispatchAccount` (a TorchDispatchMode) sees each ATen op. `x[idx]` is aten.index (a gather), `x[0:4]`
    aten.slice (a view), `torch.ones` aten.ones (an allocation with a constant). Allowed: metadata, views,
    allocations (with values from Python alone too: torch.arange, torch.tensor([...])), and constant fills
    (fill_, zero_) of storage allocated during this forward. Everything else reads values (arithmetic,
    reductions, gathers, copies, clones, dtype casts, `.item()`): torch compute, recorded and refused. An op
    on a tensor subclass is refused too (its own handler would run unseen).
  * `CallGuard` (a TorchFunctionMode) refuses the readers that bypass dispatch (`.numpy()`, `.tolist()`,
    `untyped_storage()`, `__array__`, `__dlpack__`, printing values) and serves allocations as canary-padded
    buffers (rlx.rewards.triton.guards). Readers reached from torch's own Python code are caught by wrappers
    the harness puts on torch.Tensor (rlx.rewards.triton.launches), which ask the same question.
Who issued an op (`origin`): walking the Python frames outward from the op, torch's own frames are looked
through; the first other frame decides. Triton's runtime is exempt only where every frame between the op and
a kernel launch the harness wrapped is Triton's own (its interpreter copying arguments to the host and back,
autotune's reset/restore hooks, its benchmarker): a grid callable, a heuristics or prune function, a hook and an
interpreted kernel body are the program's code and run under the full account. Under
`reward.torch_in_forward=reference_layers`, an op inside the forward of a torch.nn module whose exact type the
reference `Model` instantiates (its own class's forward, not overridden on the instance; no more instances of a
type than the reference builds: rlx.rewards.triton.layers) is the layer's, and the call is counted.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from types import CodeType, FrameType

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from rlx.rewards.triton.emulation import HostDevice
from rlx.rewards.triton.guards import padded
from rlx.rewards.triton.layers import ALLOCATIONS, VIEWS, Calls, Layers, computes
from rlx.rewards.triton.tensors import storage_ptr, storage_span

PROGRAM, TRITON, LAYER, HARNESS = "program", "triton", "layer", "harness"
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
ROOTS: set[CodeType] = set()  # the harness's launch wrappers (rlx.rewards.triton.launches)
TRANSPARENT: set[CodeType] = set()  # the harness's own handlers, looked through like torch's frames
# harness code whose torch calls are its own: the canary padding, reading where a tensor's storage lives
EXEMPT: set[CodeType] = {padded.__code__, storage_ptr.__code__, storage_span.__code__}
PLAIN = (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer)
# What Triton's own launch path may run on the program's tensors (the interpreter's copies to the host and back,
# autotune's reset_to_zero / restore_value, its benchmarker's cache): views, allocations, copies and zeroing.
MARSHALLING = VIEWS | ALLOCATIONS | {"copy_", "clone", "zero_", "fill_", "resize_"}
# Tensor methods that hand values to Python without an ATen op (refused from the program's code).
READERS = {
    "numpy", "tolist", "untyped_storage", "storage", "_typed_storage", "apply_", "map_", "map2_", "__array__",
    "__array_wrap__", "__dlpack__", "__reduce_ex__", "__deepcopy__", "__repr__", "__format__", "__str__",
}  # fmt: skip
ALLOCATORS = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like"}
ALLOCATORS |= {"new_empty", "new_zeros", "new_ones", "new_full"}
GUARDED_READERS: dict[str, object] = {}  # name -> the wrapper the harness put on torch.Tensor (launches.py)
# Constructors that copy values out of a Python sequence (torch/csrc/utils/tensor_new.cpp) with the dispatcher's
# Python key excluded: of `torch.tensor([[x[i, j] for j in ...] for i in ...])` (0-d views of an input: views read
# nothing) the DispatchAccount sees only aten.lift_fresh, so a permutation or gather by views came out as a fresh
# tensor. A tensor inside their data is a read of its values. Name -> the position of the data argument.
FROM_DATA = {"tensor": 0, "as_tensor": 0, "asarray": 0, "new_tensor": 1, "new": 1}
# A tensor's value handed to Python. `float(t)` is also aten._local_scalar_dense, but the legacy constructors
# (`torch.Tensor([...])`, `torch.FloatTensor([...])`) call `__float__` on each element with the Python key
# excluded: only this torch function mode sees them.
SCALARS = {"__float__", "__int__", "__index__", "__bool__", "__complex__", "item"}


def origin(frame: FrameType | None, account: Account | None = None) -> str:
    """Who issued the op whose innermost Python frame is `frame` (see the module docstring); `account` holds
    the reference's layers under torch_in_forward=reference_layers."""
    layers = account.layers if account is not None else None
    while frame is not None:
        code = frame.f_code
        if code in ROOTS:
            return TRITON
        if code in EXEMPT:
            return HARNESS
        if code.co_filename.startswith(TORCH_DIR):
            if layers is not None and account is not None and code.co_name == "forward":
                owned = layers.owns(frame, account.layers_used)
                if owned:
                    account.calls.note(frame, type(frame.f_locals["self"]))
                if owned is not None:
                    return LAYER if owned else PROGRAM
        elif code not in TRANSPARENT and not code.co_filename.startswith(TRITON_DIR):
            return PROGRAM
        frame = frame.f_back
    return PROGRAM


def where(frame: FrameType | None) -> str:
    """The innermost frame outside torch, Triton and the harness: `<candidate>:12`."""
    while frame is not None:
        code = frame.f_code
        own = code.co_filename.startswith((TORCH_DIR, TRITON_DIR)) or code in TRANSPARENT or code in ROOTS
        if not own:
            return f"{os.path.basename(code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _triton_dir() -> str:
    # optional dependency: triton (Linux only)
    import triton

    return os.path.dirname(triton.__file__) + os.sep


TRITON_DIR = _triton_dir()


class Account:
    """One forward's record: refused operations (with where they ran), fresh storages and the canary registry.
    `layers` is set under reward.torch_in_forward=reference_layers."""

    def __init__(self, registry: list, layers: Layers | None) -> None:
        self.registry, self.layers = registry, layers
        self.refused: list[str] = []
        self.fresh: set[int] = set()
        self.layers_used: dict[type, set[int]] = {}  # the reference-layer instances this forward ran
        self.calls = Calls()  # the reference-layer calls it made, by type

    def refuse(self, what: str, frame: FrameType | None) -> PermissionError:
        if len(self.refused) < 16:
            self.refused.append(f"{what} at {where(frame)}")
        return PermissionError(f"{what} inside ModelNew.forward: compute must run in Triton kernels")


def _sequence(value: object) -> bool:
    """What torch reads as a sequence of values (lists, tuples, collections.UserList, deque...), text aside."""
    return isinstance(value, Sequence | deque) and not isinstance(value, str | bytes | bytearray)


def holds_tensor(data: object) -> bool:
    """Whether a tensor sits inside the sequences of `data` (a tensor itself is copied by dispatched ops)."""
    pending: list[Iterable] = [data] if isinstance(data, Iterable) and _sequence(data) else []
    seen: set[int] = set()
    while pending:
        for item in pending.pop():
            if _sequence(item) and id(item) not in seen:  # a list that holds itself: once
                seen.add(id(item))
                pending.append(item)
            elif isinstance(item, torch.Tensor):
                return True
    return False


def _tensors(value, out: list) -> list:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, out)
    return out


class DispatchAccount(TorchDispatchMode):
    """Records and judges every ATen op (see the module docstring)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """False: torch would wrap the handler in torch._disable_dynamo, whose first call imports torch._dynamo
        (~6 s per candidate, and it needs a writable temp dir the sandbox's zygote lacks). Nothing here is
        compiled (the static check refuses torch.compile)."""
        return False

    def __init__(self, account: Account) -> None:
        super().__init__()
        self.account = account

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        account, frame = self.account, sys._getframe(1)
        name, overload = func._schema.name.split("::")[-1], func._overloadname
        who = origin(frame, account)
        if who != HARNESS and any(type(t) not in PLAIN for t in _tensors((args, kwargs), [])):
            raise account.refuse(f"aten.{name} on a tensor subclass", frame)
        if who == PROGRAM and computes(name, overload, args, account.fresh):
            raise account.refuse(f"aten.{name}.{overload}" if overload else f"aten.{name}", frame)
        if who == TRITON and name not in MARSHALLING:
            raise account.refuse(f"aten.{name} in Triton's launch path", frame)
        result = func(*args, **kwargs)
        if name in ALLOCATIONS and isinstance(result, torch.Tensor):
            account.fresh.add(storage_ptr(result))
        return result


class CallGuard(TorchFunctionMode):
    """Refuses the dispatch-bypassing readers from the program's code; pads its allocations."""

    def __init__(self, account: Account) -> None:
        super().__init__()
        self.account = account

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        for reader, wrapper in GUARDED_READERS.items():  # torch's own Python code reads through these
            if vars(torch.Tensor).get(reader) is not wrapper:
                raise self.account.refuse(f"torch.Tensor.{reader} replaced", sys._getframe(1))
        if name in FROM_DATA:
            at = FROM_DATA[name]
            data = args[at] if len(args) > at else kwargs.get("data", kwargs.get("obj"))
            frame = sys._getframe(1)
            if holds_tensor(data) and origin(frame, self.account) == PROGRAM:
                raise self.account.refuse(f"torch.{name} of a sequence holding tensors (reads their values)", frame)
        if name in READERS or name in ALLOCATORS or name in SCALARS:
            frame = sys._getframe(1)
            if origin(frame, self.account) == PROGRAM:
                if name in READERS or name in SCALARS:
                    raise self.account.refuse(f"Tensor.{name}", frame)
                result = func(*args, **kwargs)
                if type(result) is torch.Tensor and result.is_contiguous() and not result.requires_grad:
                    return padded(result, self.account.registry)
                return result
        return func(*args, **kwargs)


TRANSPARENT |= {DispatchAccount.__torch_dispatch__.__code__, CallGuard.__torch_function__.__code__}
TRANSPARENT.add(HostDevice.__torch_function__.__code__)  # the emulated device's argument mapping
