"""Tensor results crossing the sandbox boundary as data (dtype, shape, raw bytes), compared outside."""

from __future__ import annotations

import base64

import numpy as np

TOLERANCE = {"torch.float32": 1e-4, "torch.float16": 1e-2, "torch.bfloat16": 1e-2}  # KernelBench atol = rtol


def encode_tensor(tensor) -> dict:
    import torch

    data = tensor.detach().to("cpu").contiguous()
    raw = data.view(torch.uint8) if data.dtype == torch.bfloat16 else data
    return {
        "dtype": str(tensor.dtype),
        "shape": list(tensor.shape),
        "data": base64.b64encode(raw.numpy().tobytes()).decode(),
    }


def _array(encoded: dict) -> np.ndarray:
    raw = base64.b64decode(encoded["data"])
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
