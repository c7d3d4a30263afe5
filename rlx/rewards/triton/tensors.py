"""Tensors crossing the sandbox boundary as data (dtype, shape, raw bytes), compared outside.

Into the candidate's process: the trial inputs, as bytes (`to_torch`); nothing there draws them. Out of it:
`encode_output`, which accepts only a plain `torch.Tensor` (not a subclass, whose methods would run candidate
code while it is encoded; not a view of an input) and reads its bytes with torch's C methods bound when this
module was imported, before any candidate code ran (candidate code can replace `torch.Tensor.numpy`, not
these references, and torch's C base type refuses new attributes). The comparison (`compare`) runs in the
checker on numpy arrays decoded from the bytes.
"""

from __future__ import annotations

import base64

import numpy as np
import torch

TOLERANCE = {"torch.float32": 1e-4, "torch.float16": 1e-2, "torch.bfloat16": 1e-2}  # KernelBench atol = rtol
DTYPES = {
    str(d): d
    for d in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.int8)
}
DTYPES.update({"torch.uint8": torch.uint8, "torch.bool": torch.bool, "torch.int16": torch.int16})

_BASE, _STORAGE = torch._C.TensorBase, torch._C.StorageBase
_TENSOR, _STRIDED = torch.Tensor, torch.strided
_detach, _contiguous, _cpu, _view, _numpy = _BASE.detach, _BASE.contiguous, _BASE.cpu, _BASE.view, _BASE.numpy
_reshape, _to, _empty = _BASE.reshape, _BASE.to, torch.empty
_untyped_storage = _BASE.untyped_storage
_storage_ptr, _storage_bytes = _STORAGE.data_ptr, _STORAGE.nbytes  # type: ignore[attr-defined]  # C methods
_layout, _dtype = _BASE.layout.__get__, _BASE.dtype.__get__  # type: ignore[attr-defined]  # C getters
_shape = _BASE.shape.__get__  # type: ignore[attr-defined]
_frombuffer, _uint8 = torch.frombuffer, torch.uint8
_b64encode, _b64decode, _str, _list, _int = base64.b64encode, base64.b64decode, str, list, int


class NotATensor(Exception):
    """The forward's result cannot leave the sandbox as a tensor; the message says why (a VIOLATION)."""


def encode_tensor(tensor: torch.Tensor) -> dict:
    """A tensor the harness made itself (an input, the reference's output) as {"dtype", "shape", "data"}."""
    data = _contiguous(_cpu(_detach(tensor)))
    raw = _view(_reshape(data, (-1,)), _uint8)  # bf16 has no numpy dtype: raw bytes for every dtype
    data_b64 = _b64encode(_numpy(raw).tobytes()).decode()
    return {"dtype": _str(_dtype(tensor)), "shape": _list(_shape(tensor)), "data": data_b64}


def storage_span(tensor: torch.Tensor) -> tuple[int, int]:
    """[start, end) of the memory a tensor's storage covers."""
    storage = _untyped_storage(tensor)
    start = _int(_storage_ptr(storage))
    return start, start + _int(_storage_bytes(storage))


def to_device(tensor: torch.Tensor, device: str) -> torch.Tensor:
    return _to(tensor, device)


def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of a tensor's storage: which buffer it lives in, whatever view of it this is."""
    return _int(_storage_ptr(_untyped_storage(tensor)))


def encode_output(output: object, input_spans: list[tuple[int, int]]) -> dict:
    """The candidate's result, encoded, or NotATensor: it must be exactly a strided torch.Tensor whose memory
    overlaps no input's (a view of an input would pass for a copy)."""
    plain_output(output, input_spans)
    return encode_tensor(output)  # type: ignore[arg-type]


def plain_output(output: object, input_spans: list[tuple[int, int]]) -> None:
    """NotATensor unless `output` is exactly a strided torch.Tensor whose memory overlaps no input's."""
    if type(output) is not _TENSOR:
        raise NotATensor(f"forward returned {type(output).__name__}, not exactly a torch.Tensor")
    if _layout(output) is not _STRIDED:
        raise NotATensor("forward returned a tensor that is not strided")
    start, end = storage_span(output)
    if end > start and any(start < b_end and b_start < end for b_start, b_end in input_spans):
        raise NotATensor("forward returned memory of one of its inputs")


def to_torch(encoded: dict) -> torch.Tensor:
    """A tensor with the encoding's dtype, shape and bytes (its own writable memory)."""
    raw = bytearray(_b64decode(encoded["data"]))
    dtype, shape = DTYPES[encoded["dtype"]], tuple(encoded["shape"])
    if not raw:
        return _empty(shape, dtype=dtype)
    return _reshape(_view(_frombuffer(raw, dtype=_uint8), dtype), shape)


def _array(encoded: dict) -> np.ndarray:
    raw = base64.b64decode(encoded["data"], validate=True)
    if encoded["dtype"] == "torch.bfloat16":  # widen bf16 to float32 by bit shifting
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, np.dtype(encoded["dtype"].removeprefix("torch.")))


def compare(got: dict, expected: dict) -> tuple[bool, str]:
    """(match, why not): exact dtype and shape, all finite, then allclose with the dtype's tolerance."""
    if not isinstance(got, dict) or got.get("dtype") != expected["dtype"]:
        return False, f"dtype {got.get('dtype') if isinstance(got, dict) else got} != {expected['dtype']}"
    if got.get("shape") != expected["shape"]:
        return False, f"shape {got.get('shape')} != {expected['shape']}"
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # garbage bytes may decode to NaN: caught below
            a, b = _array(got).astype(np.float64), _array(expected).astype(np.float64)
    except (ValueError, TypeError, KeyError) as err:
        return False, f"undecodable output ({err})"
    if a.shape != b.shape:
        return False, "byte length does not match the shape"
    if not np.isfinite(a).all():
        return False, "non-finite values"
    tol = TOLERANCE.get(expected["dtype"], 0.0)
    if not np.allclose(a, b, atol=tol, rtol=tol):
        return False, f"max abs error {float(np.abs(a - b).max()):.3g} > tolerance {tol}"
    return True, ""
