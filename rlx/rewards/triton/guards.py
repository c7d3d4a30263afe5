"""In-candidate checks for kernels: runtime launch counting, a torch allow-list for ModelNew.forward, and
canary padding around every tensor the forward can touch (to catch out-of-bounds writes, which the Triton
interpreter does not bounds-check).

These run inside the candidate's process, so a candidate written against this harness could tamper with
them; what decides correctness (the outputs) is compared outside. They turn the common hacks (a torch
fallback, a kernel never launched, writing past a buffer) into labelled VIOLATIONs.
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
    "__index__",
    "__format__",
    "__repr__",
    "__hash__",
    "is_floating_point",
    "storage_offset",
    "untyped_storage",
    "dim_order",
    "get_device",
}
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
    """Refuses (and records) every torch call outside ALLOWED while ModelNew.forward runs, except inside a
    kernel launch; allocations are served as canary-padded buffers."""

    def __init__(self, registry: list) -> None:
        super().__init__()
        self.registry = registry
        self.refused: list[str] = []
        self.in_launch = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.in_launch:
            return func(*args, **kwargs)
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


def count_launches(guard_box: list, counter: list, blocks: list) -> None:
    """Wrap the Triton launch entry points (compiled and interpreted) to count launches at runtime, keep the
    integer keyword arguments of the first 8 (e.g. {"B": 128}: what a plan's block is checked against), and lift
    the allow-list while a kernel's own launcher runs."""
    import triton.runtime.interpreter as interpreter
    import triton.runtime.jit as jit

    for cls in {jit.JITFunction, interpreter.InterpretedFunction}:
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            counter[0] += 1
            if len(blocks) < 8:
                blocks.append({k: v for k, v in kwargs.items() if type(v) is int and k not in ("grid", "warmup")})
            guard = guard_box[0]
            previous = guard.in_launch if guard else False
            if guard:
                guard.in_launch = True
            try:
                return _original(self, *args, **kwargs)
            finally:
                if guard:
                    guard.in_launch = previous

        cls.run = run
