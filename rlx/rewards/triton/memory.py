"""Bounds checks on every memory access of an interpreted kernel (TRITON_INTERPRET=1).

Triton's interpreter runs a kernel's loads, stores and atomics on raw host addresses without checking them
(triton/runtime/interpreter.py, InterpreterBuilder.create_masked_load / create_masked_store / create_atomic_cas /
create_atomic_rmw, through which `tl.load`, `tl.store`, every `tl.atomic_*`, and tensor descriptors' loads and
stores all go). A kernel could read or write anywhere in the candidate's process: the harness's records, other
objects, memory no argument of its launch covers. Here each of those entry points first checks every masked-in
address, vectorised with numpy: the whole element must lie inside the storage of a tensor passed to that launch
(the storages the interpreter's launch hands the kernel, `GridExecutor._init_args_hst`). From one argument's
pointer to another argument's storage is in bounds (both are the kernel's to touch); anywhere else is not. An
access outside is never made: it is recorded in the session (`Session.faults`, which the program cannot reach) and
raised in the kernel, and the trial is a VIOLATION labelled with the kernel, the operation and the address.
"""

from __future__ import annotations

import numpy as np
import torch

from rlx.rewards.triton import account
from rlx.rewards.triton.tensors import storage_span

MAX_FAULTS = 8


class OutOfBounds(RuntimeError):
    """A kernel's load, store or atomic outside the memory of its launch's tensors."""


class Spans:
    """The storages one launch may touch: sorted [start, end) byte ranges, and the kernel's name."""

    def __init__(self, kernel: str, ranges: list[tuple[int, int]]) -> None:
        ranges = sorted({(a, b) for a, b in ranges if b > a})
        self.kernel = kernel
        self.starts = np.array([a for a, _ in ranges], dtype=np.uint64)
        self.ends = np.array([b for _, b in ranges], dtype=np.uint64)

    def outside(self, addresses: np.ndarray, size: int) -> np.ndarray:
        """The addresses (uint64) whose `size`-byte element is not wholly inside one range."""
        if self.starts.size == 0:
            return addresses
        i = np.searchsorted(self.starts, addresses, side="right").astype(np.int64) - 1
        j = np.maximum(i, 0)
        start, end = self.starts[j], self.ends[j]
        # end - address is computed only where address < end: no uint64 wrap-around near 2**64
        inside = (i >= 0) & (addresses >= start) & (addresses < end)
        inside &= np.where(inside, end - np.minimum(addresses, end), 0) >= size
        return addresses[~inside]


def _storages(value: object, out: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The storage spans of every tensor in a launch's (host) argument, through tuples, descriptors, wrappers."""
    # optional dependency: triton (Linux only)
    from triton.runtime.jit import TensorWrapper
    from triton.tools.tensor_descriptor import TensorDescriptor

    if isinstance(value, (tuple, list)):
        for item in value:
            _storages(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _storages(item, out)
    elif isinstance(value, (TensorDescriptor, TensorWrapper)):
        _storages(value.base, out)
    elif isinstance(value, torch.Tensor) and type(value) in account.PLAIN:
        out.append(storage_span(value))
    return out


def install(session) -> None:
    """Wraps the interpreter's memory entry points and its launch's host arguments (once per process, before any
    candidate code). `session` (rlx.rewards.triton.launches.Session) holds the current launch's `spans` and the
    process's `faults`."""
    # optional dependency: triton (Linux only)
    import triton.runtime.interpreter as interpreter

    def check(ptrs, mask, size: int, operation: str) -> None:
        addresses = np.asarray(ptrs.data).astype(np.uint64, copy=False)
        if mask is not None:
            addresses = addresses[np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)]
        addresses = addresses.reshape(-1)
        if addresses.size == 0:
            return
        spans: Spans | None = session.spans
        bad = addresses if spans is None else spans.outside(addresses, max(1, size))
        if bad.size:
            kernel = spans.kernel if spans is not None else "?"
            label = (
                f"out-of-bounds {operation} in kernel {kernel}: {bad.size} of {addresses.size} addresses outside the "
                f"tensors passed to its launch (first at {int(bad[0]):#x})"
            )
            if len(session.faults) < MAX_FAULTS:
                session.faults.append(label)
            raise OutOfBounds(label)

    def element(handle) -> int:
        return handle.get_element_ty().primitive_bitwidth // 8

    builder = interpreter.InterpreterBuilder
    masked_load, masked_store = builder.create_masked_load, builder.create_masked_store
    atomic_cas, atomic_rmw = builder.create_atomic_cas, builder.create_atomic_rmw

    def create_masked_load(self, ptrs, mask, other, cache_policy, is_volatile):
        check(ptrs, mask, element(ptrs), "load")
        return masked_load(self, ptrs, mask, other, cache_policy, is_volatile)

    def create_masked_store(self, ptrs, value, mask, cache_policy):
        check(ptrs, mask, max(element(ptrs), np.asarray(value.data).itemsize), "store")
        return masked_store(self, ptrs, value, mask, cache_policy)

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        check(ptr, None, max(element(ptr), np.asarray(cmp.data).itemsize), "atomic_cas")
        return atomic_cas(self, ptr, cmp, val, sem, scope)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        check(ptr, mask, max(element(ptr), np.asarray(val.data).itemsize), "atomic")
        return atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope)

    builder.create_masked_load, builder.create_masked_store = create_masked_load, create_masked_store
    builder.create_atomic_cas, builder.create_atomic_rmw = create_atomic_cas, create_atomic_rmw

    host_args = interpreter.GridExecutor._init_args_hst

    def init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = host_args(self, args_dev, kwargs)
        session.spans = Spans(getattr(self.fn, "__name__", "?"), _storages([args_hst, kwargs_hst], []))
        return args_hst, kwargs_hst

    interpreter.GridExecutor._init_args_hst = init_args_hst
    account.TRANSPARENT.add(init_args_hst.__code__)  # Triton's copies to the host run through it
