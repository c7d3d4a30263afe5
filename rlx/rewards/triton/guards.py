"""In-candidate checks for kernels: runtime launch counting, a torch allow-list for ModelNew.forward, and
canary padding around every tensor the forward can touch (to catch out-of-bounds writes, which the Triton
interpreter does not bounds-check).

These run inside the candidate's process. What keeps candidate code from tampering with them is the static
vocabulary (rlx.rewards.triton.static, decided in the checker): without underscore names, getattr, or imports
beyond torch/triton/math it cannot reach the mode stack, this module's closures or a second thread. The guard
holds no switch either: while a kernel's own launcher runs (it needs `untyped_storage` and friends), the
launch wrapper takes the guard off torch's mode stack and puts it back, so there is no flag to flip. What
decides correctness (the outputs on inputs drawn outside) is compared in the checker.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

PAD = 256  # canary elements on each side of a guarded buffer
# Canary bytes, a different one for each buffer of a call (inputs first, then what forward allocates): a kernel
# that reads past one buffer and writes what it read past another changes that one's canary even where the
# value is a fixed point of its computation (an unmasked hardtanh copies 0xA5A5A5A5 = -2.9e-16 unchanged).
CANARIES = (0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69)
# Shape/stride queries, views and allocation: everything a launcher needs, nothing that computes values.
ALLOWED = {
    "__get__",
    "size",
    "numel",
    "dim",
    "stride",
    "is_contiguous",
    "contiguous",
    "view",
    "reshape",
    "data_ptr",
    "element_size",
    "flatten",
    "unsqueeze",
    "squeeze",
    "__getitem__",
    "__len__",
    "__hash__",
    "is_floating_point",
    "storage_offset",
    "dim_order",
    "get_device",
}
# Readers refused on purpose (each hands tensor values to Python, where a program computes unseen and then has
# a kernel store the numbers): untyped_storage (bytes), __repr__/__format__ (printed values), __index__ (the
# bits of a float viewed as an int), tolist/item/numpy/__float__/__bool__/__iter__ (not listed).
ALLOCATORS = {"empty", "empty_like", "zeros", "zeros_like", "new_empty", "new_zeros"}


def padded(tensor: torch.Tensor, registry: list) -> torch.Tensor:
    """A contiguous copy of `tensor` placed between two canary regions that are checked later."""
    numel = tensor.numel()
    canary = CANARIES[len(registry) % len(CANARIES)]
    buffer = torch.empty(numel + 2 * PAD, dtype=tensor.dtype, device=tensor.device)
    raw = buffer.view(torch.uint8)
    raw.fill_(canary)
    inner = buffer[PAD : PAD + numel].view(tensor.shape)
    inner.copy_(tensor)
    registry.append((buffer, canary))
    return inner


def canaries_intact(registry: list) -> bool:
    for buffer, canary in registry:
        raw = buffer.view(torch.uint8)
        edge = PAD * buffer.element_size()
        if not (bool((raw[:edge] == canary).all()) and bool((raw[-edge:] == canary).all())):
            return False
    return True


class ForwardGuard(TorchFunctionMode):
    """Refuses (and records) every torch call outside ALLOWED while ModelNew.forward runs; allocations are
    served as canary-padded buffers. Kernel launches run without it (count_launches takes it off the stack)."""

    def __init__(self, registry: list) -> None:
        super().__init__()
        self.registry = registry
        self.refused: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", repr(func))
        if name in ALLOCATORS:
            result = func(*args, **kwargs)
            if isinstance(result, torch.Tensor) and result.is_contiguous() and not result.requires_grad:
                return padded(result, self.registry)
            return result
        if name in ALLOWED:
            return func(*args, **kwargs)
        self.refused.append(name)
        raise PermissionError(f"torch.{name} inside ModelNew.forward: compute must happen in Triton kernels")


_pop_mode, _push_mode = torch._C._pop_torch_function_stack, torch._C._push_on_torch_function_stack
_stack_depth = torch._C._len_torch_function_stack


def count_launches(counter: list, launches: list) -> None:
    """Wrap the Triton launch entry points (compiled and interpreted) to count launches at runtime and keep
    the kernel's name and integer keyword arguments of the first 8 (e.g. ("relu_k", {"B": 128}): what a plan
    is checked against). While the kernel's own launcher runs, the guard (on top of torch's mode stack while
    forward runs) is off the stack."""
    # optional dependency: triton (Linux only)
    import triton.runtime.interpreter as interpreter
    import triton.runtime.jit as jit

    for cls in {jit.JITFunction, interpreter.InterpretedFunction}:
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            counter[0] += 1
            if len(launches) < 8:
                ints = {k: v for k, v in kwargs.items() if type(v) is int and k not in ("grid", "warmup")}
                launches.append((str(getattr(getattr(self, "fn", None), "__name__", "?")), ints))
            guard = _pop_mode() if _stack_depth() else None
            try:
                return _original(self, *args, **kwargs)
            finally:
                if guard is not None:
                    _push_mode(guard)

        cls.run = run
