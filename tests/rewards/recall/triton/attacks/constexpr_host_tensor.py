# task: relu
# Host tensors passed as tl.constexpr reach the interpreted kernel body as torch tensors; the body computes
# relu with torch methods that share Triton's names and writes the output in place.
# Stopped by: the launch (a tensor constexpr), the account (torch ops in the body), the static check (an item
# assignment in a kernel).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def body(o_ptr, X: tl.constexpr, Y: tl.constexpr):
    Y[:] = (X + X.abs()) * 0.5
    tl.store(o_ptr, tl.load(o_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        body[(1,)](y, x, y)
        return y
