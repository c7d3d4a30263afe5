# task: row_sum
# A split reduction: programs over (row, column block) add their weighted partial sums into a zero-initialised
# output with tl.atomic_add; torch.zeros allocates it, torch.ones the (unit) column weights.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_row_sum(x_ptr, w_ptr, out_ptr, n_cols, stride_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    block = tl.program_id(1)
    cols = block * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x * w, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1, "this kernel sums rows"

    def forward(self, x):
        rows, cols = x.shape
        out = torch.zeros(rows, device=x.device, dtype=torch.float32)
        weights = torch.ones(cols, device=x.device, dtype=x.dtype)
        BLOCK_N = 128
        partial_row_sum[(rows, triton.cdiv(cols, BLOCK_N))](x, weights, out, cols, x.stride(0), BLOCK_N=BLOCK_N)
        return out
