# task: linear_gelu_scale
# torch_in_forward: reference_layers
# Reuses the task's names without defining them: ModelNew subclasses the reference Model (its constructor builds
# the same nn.Linear), and forward keeps that layer and fuses tanh-GELU and the scale.
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0)) * scale
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(Model):
    def forward(self, x):
        h = self.linear(x)
        y = torch.empty_like(h)
        gelu_scale_kernel[(triton.cdiv(y.numel(), 64),)](h, y, y.numel(), float(self.scale), BLOCK=64)
        return y
