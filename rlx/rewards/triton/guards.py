"""Canary padding around every tensor the forward can touch, to catch out-of-bounds writes (the Triton
interpreter does not bounds-check). Runs in the candidate's process; every torch call here goes through
references bound when this module was imported (before any candidate code exists), so a program that rebinds
torch.Tensor's methods changes nothing here.
"""

from __future__ import annotations

import torch

PAD = 256  # canary elements on each side of a guarded buffer
# Canary bytes, a different one for each buffer of a call (inputs first, then what forward allocates): a kernel
# that reads past one buffer and writes what it read past another changes that one's canary even where the
# value is a fixed point of its computation (an unmasked hardtanh copies 0xA5A5A5A5 = -2.9e-16 unchanged).
CANARIES = (0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69)

_BASE = torch._C.TensorBase
_empty, _uint8, _equal = torch.empty, torch.uint8, torch.equal
_view, _fill, _copy, _numel, _slice = _BASE.view, _BASE.fill_, _BASE.copy_, _BASE.numel, _BASE.__getitem__
_element_size, _full_like = _BASE.element_size, torch.full_like
_shape, _dtype, _device = (
    _BASE.shape.__get__,  # type: ignore[attr-defined]  # C getters
    _BASE.dtype.__get__,  # type: ignore[attr-defined]
    _BASE.device.__get__,
)


def padded(tensor: torch.Tensor, registry: list) -> torch.Tensor:
    """A contiguous copy of `tensor` placed between two canary regions that are checked later."""
    numel = _numel(tensor)
    canary = CANARIES[len(registry) % len(CANARIES)]
    buffer = _empty(numel + 2 * PAD, dtype=_dtype(tensor), device=_device(tensor))
    _fill(_view(buffer, _uint8), canary)
    inner = _view(_slice(buffer, slice(PAD, PAD + numel)), _shape(tensor))
    _copy(inner, tensor)
    registry.append((buffer, canary))
    return inner


def canaries_intact(registry: list) -> bool:
    for buffer, canary in registry:
        raw = _view(buffer, _uint8)
        edge = PAD * _element_size(buffer)
        for part in (_slice(raw, slice(None, edge)), _slice(raw, slice(-edge, None))):
            if not _equal(part, _full_like(part, canary)):
                return False
    return True
