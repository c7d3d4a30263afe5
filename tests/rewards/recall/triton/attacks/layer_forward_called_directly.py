# task: linear_relu
# torch_in_forward: reference_layers
# Runs the layers of a reference that is all modules by calling their `forward` methods directly (no module
# call, so no module hook would see it), then copies the result in a kernel.
# Stopped by: the account, which counts layer calls by the frames of their forward, however they were called.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_k(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.relu = nn.ReLU()

    def forward(self, x):
        z = self.relu.forward(self.linear.forward(x))
        y = torch.empty_like(z)
        copy_k[(triton.cdiv(y.numel(), 128),)](z, y, y.numel(), B=128)
        return y
