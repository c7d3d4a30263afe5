# task: linear_relu_scale
# torch_in_forward: reference_layers
# Keeps every module the reference calls (nn.Linear and nn.ReLU): the reference computes a scale outside its
# modules, and that is what the kernel does.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.relu = nn.ReLU()
        self.scale = scale

    def forward(self, x):
        h = self.relu(self.linear(x))
        y = torch.empty_like(h)
        scale_kernel[(triton.cdiv(y.numel(), 64),)](h, y, y.numel(), self.scale, BLOCK=64)
        return y
