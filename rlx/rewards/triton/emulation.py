"""CUDA on a CPU: the device Triton's interpreter emulates (TRITON_INTERPRET=1), named as a GPU program names it.

Code written for GPUs says where its tensors live: `.cuda()`, `device="cuda"`, `torch.device("cuda")`,
`assert x.is_cuda`, `torch.cuda.is_available()`, `torch.cuda.synchronize()`, `with torch.cuda.device(i):`,
`DEVICE = triton.runtime.driver.active.get_active_torch_device()` (KernelBench's own Triton example asserts
`x.is_cuda`; its reference's `get_inputs` calls `.cuda()`). Under the interpreter a kernel runs on host memory,
so the harness (rlx.rewards.triton.harness) makes host memory the device for the task file and the program alike,
in the reference's sandbox and the candidate's, before any of their code runs:

  * `HostDevice`, a torch function mode the harness holds while their code runs (load, draw, forward): a device
    argument that names CUDA (`"cuda"`, `"cuda:0"`, `torch.device("cuda")`, an index) means the CPU; `.cuda()`
    and `.pin_memory()` return the tensor itself (it is already in the device's memory); a tensor reports
    `is_cuda` True, `is_cpu` False, `device` cuda:0 and `get_device()` 0, as on a one-GPU machine;
  * `torch.cuda`'s queries answer for that one device (`is_available()`, `device_count()`, `current_device()`,
    `get_device_name()`, `get_device_capability()`, `get_device_properties()` with nominal numbers), and its
    no-ops are no-ops (`synchronize()`, `set_device()`, `empty_cache()`, `device(i)`, `device_of(x)`,
    `current_stream()`, `stream(s)`);
  * Triton's interpreter driver (rlx.rewards.triton.launches) reports cuda:0 as its active torch device.

Nothing here reads or computes a value: a mapped call is the same call on the CPU (the runtime account still sees
every ATen op it runs, rlx.rewards.triton.account), `.cuda()` returns its argument, and the queries return
constants. On a GPU (no TRITON_INTERPRET) none of this is installed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

DEVICE = torch.device("cuda", 0)  # what the program sees
HOST = torch.device("cpu")  # where its memory is
NAME = "Triton interpreter (CPU)"
CAPABILITY = (9, 0)
_BASE = torch._C.TensorBase
# getters answered for the emulated device (the mode receives `descriptor.__get__`, whose __self__ is the descriptor)
_GETTERS: dict[object, object] = {_BASE.is_cuda: True, _BASE.is_cpu: False, _BASE.device: DEVICE}
_IDENTITY = (_BASE.cuda, _BASE.pin_memory)  # already in the device's memory
_GET_DEVICE, _TO = _BASE.get_device, _BASE.to


def host(device: object) -> object:
    """The device a program's device argument means here: the CPU for any CUDA device, else itself."""
    if isinstance(device, torch.device):
        return HOST if device.type == "cuda" else device
    if isinstance(device, str):
        return "cpu" if device.split(":")[0] == "cuda" else device
    if type(device) is int:  # an index names a CUDA device
        return HOST
    return device


class HostDevice(TorchFunctionMode):
    """CUDA device arguments mean the CPU; tensors report the emulated device (see the module docstring)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        owner = getattr(func, "__self__", None)
        if owner is not None and getattr(func, "__name__", "") == "__get__":
            for getter, value in _GETTERS.items():
                if owner is getter:
                    return value
        if any(func is f for f in _IDENTITY):
            return args[0]
        if func is _GET_DEVICE:
            return 0
        if "device" in kwargs:
            kwargs["device"] = host(kwargs["device"])
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        if func is _TO:
            args = (args[0], *(host(a) if isinstance(a, (str, torch.device, int)) else a for a in args[1:]))
        return func(*args, **kwargs)


@dataclass(frozen=True)
class DeviceProperties:
    """What `torch.cuda.get_device_properties()` reports for the emulated device (nominal: an H100-like SM, the
    numbers rlx.rewards.triton.launches.NOMINAL_DEVICE gives Triton)."""

    name: str = NAME
    major: int = CAPABILITY[0]
    minor: int = CAPABILITY[1]
    total_memory: int = 80 * 2**30
    multi_processor_count: int = 4
    max_threads_per_multi_processor: int = 2048
    regs_per_multiprocessor: int = 65536
    warp_size: int = 32
    L2_cache_size: int = 50 * 2**20
    shared_memory_per_block_optin: int = 232448
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    gcnArchName: str = "NVIDIA"


class _Stream:
    """torch.cuda.current_stream() of the emulated device: work is done when it returns, so waiting is a no-op."""

    device = DEVICE
    cuda_stream = 0

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: object) -> None:
        return None

    def query(self) -> bool:
        return True


class _DeviceScope(contextlib.nullcontext):
    """torch.cuda.device(i) / device_of(x): one device, so entering it changes nothing."""

    def __init__(self, device: object = None) -> None:
        super().__init__()
        self.idx = 0


def _nothing(*args: object, **kwargs: object) -> None:
    return None


def _stream(*args: object, **kwargs: object) -> _Stream:
    return _Stream()


CUDA_API: dict[str, object] = {
    "is_available": lambda: True,
    "device_count": lambda: 1,
    "current_device": lambda: 0,
    "is_bf16_supported": lambda *args, **kwargs: True,
    "get_device_name": lambda device=None: NAME,
    "get_device_capability": lambda device=None: CAPABILITY,
    "get_device_properties": lambda device=None: DeviceProperties(),
    "synchronize": _nothing,
    "set_device": _nothing,
    "empty_cache": _nothing,
    "current_stream": _stream,
    "default_stream": _stream,
    "stream": lambda stream=None: contextlib.nullcontext(),
    "device": _DeviceScope,
    "device_of": _DeviceScope,
}
_installed: list[bool] = []


def install() -> None:
    """Puts torch.cuda's emulated queries in place (once per process, before any task or program code runs)."""
    if _installed:
        return
    for name, value in CUDA_API.items():
        setattr(torch.cuda, name, value)
    _installed.append(True)


def emulating() -> contextlib.AbstractContextManager:
    """The mode that maps CUDA to the host while task or program code runs; nothing where not installed."""
    return HostDevice() if _installed else contextlib.nullcontext()
