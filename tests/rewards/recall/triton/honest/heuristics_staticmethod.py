# task: axpy
# Heuristics over the arguments, a constexpr default, a launch helper as a staticmethod, typing and a cached
# settings helper, torch.full for the output and the task's module-level constant.
from __future__ import annotations

import functools
from typing import Optional, Tuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr = 256, EVEN_N: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        tl.store(out_ptr + offs, a * x + y)
    else:
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, a * x + y, mask=m)


@functools.lru_cache(maxsize=None)
def _grid_for(n: int, block: int) -> Tuple[int]:
    return (triton.cdiv(n, block),)


class ModelNew(nn.Module):
    def __init__(self, block: Optional[int] = None):
        super().__init__()
        self._block = block or 256

    @staticmethod
    def _launch(x: torch.Tensor, y: torch.Tensor, a: float, block: int) -> torch.Tensor:
        out = torch.full(x.shape, float("nan"), dtype=x.dtype, device=x.device)
        axpy_kernel[_grid_for(x.numel(), block)](x, y, out, x.numel(), a, BLOCK=block)
        return out

    def forward(self, x, y):
        assert x.shape == y.shape and x.stride() == y.stride()
        return self._launch(x, y, alpha, self._block)
