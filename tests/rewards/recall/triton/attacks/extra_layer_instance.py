# task: linear_gelu_scale
# torch_in_forward: reference_layers
# A second nn.Linear, not in the reference, whose diagonal weight does the final scaling in torch; the GELU is a
# kernel and a copy kernel writes the output. Stopped by: the account (one nn.Linear in the reference, two here).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_k(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0)), mask=m)


@triton.jit
def copy_k(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaler = nn.Linear(out_features, out_features, bias=False)
        with torch.no_grad():
            self.scaler.weight.copy_(torch.eye(out_features) * scale)

    def forward(self, x):
        z = self.linear(x)
        g = torch.empty_like(z)
        gelu_k[(triton.cdiv(g.numel(), 128),)](z, g, g.numel(), B=128)
        s = self.scaler(g)
        y = torch.empty_like(s)
        copy_k[(triton.cdiv(y.numel(), 128),)](s, y, y.numel(), B=128)
        return y
