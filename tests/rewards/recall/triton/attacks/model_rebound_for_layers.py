# task: linear_gelu_scale
# torch_in_forward: reference_layers
# Defines its own `Model` with an nn.GELU, hoping the layers it may keep are read from that name, and then runs
# GELU in torch.
# Stopped by: the harness, which reads the reference's layers from the task's own Model (captured before the
# program runs): nn.GELU is not one of them, so its forward is torch compute.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gelu = nn.GELU(approximate="tanh")


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gelu = nn.GELU(approximate="tanh")
        self.scale = scale

    def forward(self, x):
        h = self.gelu(self.linear(x))
        y = torch.empty_like(h)
        scale_kernel[(triton.cdiv(y.numel(), 64),)](h, y, y.numel(), self.scale, BLOCK=64)
        return y
