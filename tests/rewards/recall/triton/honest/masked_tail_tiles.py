# task: relu
# Two-dimensional tiles whose last row and column blocks overhang the matrix: every load and store is masked on
# both axes, and the masked-out addresses (past the end of the rows, past the last row) are never touched.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_tile_kernel(x_ptr, y_ptr, rows, cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < rows) & (rn[None, :] < cols)
    offsets = rm[:, None] * stride + rn[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        grid = (triton.cdiv(rows, 8), triton.cdiv(cols, 32))  # 16 x 100: the last column block holds 4 of 32
        relu_tile_kernel[grid](x, y, rows, cols, x.stride(0), BLOCK_M=8, BLOCK_N=32)
        return y
