# task: relu
# Launches a kernel while the model is built, not only in forward: the constructor reduces a buffer with tl.sum
# (one of Triton's own jit functions, called from the kernel) into the threshold forward uses.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def total_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@triton.jit
def clamp_below_kernel(x_ptr, floor_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), tl.load(floor_ptr)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        floor = torch.empty(1)
        total_kernel[(1,)](torch.zeros(10), floor, 10, BLOCK=16)  # 0.0: ReLU's floor
        self.register_buffer("floor", floor)

    def forward(self, x):
        y = torch.empty_like(x)
        clamp_below_kernel[(triton.cdiv(y.numel(), 256),)](x, self.floor, y, y.numel(), BLOCK=256)
        return y
