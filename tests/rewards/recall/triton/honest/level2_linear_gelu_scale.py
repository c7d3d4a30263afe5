# task: linear_gelu_scale
# torch_in_forward: reference_layers
# A KernelBench level-2 answer: nn.Linear as the reference built it, tanh-GELU and the scale in Triton.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_tanh_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    k0 = 0.7978845608028654  # sqrt(2 / pi)
    inner = k0 * (x + 0.044715 * x * x * x)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0  # tanh(inner)
    y = 0.5 * x * (1.0 + t) * scale
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = float(scale)
        assert math.isfinite(self.scale)

    def forward(self, x):
        x = self.linear(x)
        y = torch.empty_like(x)
        n = y.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        gelu_tanh_scale_kernel[grid](x, y, n, self.scale, BLOCK_SIZE=128)
        return y
