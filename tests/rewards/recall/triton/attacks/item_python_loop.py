# task: relu
# Element by element with .item(): each value read into Python, the result written with a constant fill.
# Stopped by: the account (aten._local_scalar_dense reads a value).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch(y_ptr, B: tl.constexpr):
    tl.store(y_ptr, tl.load(y_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y[i, j].fill_(max(x[i, j].item(), 0.0))
        touch[(1,)](y, B=16)
        return y
