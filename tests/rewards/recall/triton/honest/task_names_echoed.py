# task: scale_from_init
# An answer that repeats the task's own definitions (Model, the size constants, get_inputs, get_init_inputs) before
# its ModelNew, as models often do when they copy the architecture they were shown.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """Multiplies by the scale the constructor gets (get_init_inputs reads a module-level constant)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


rows, cols = 8, 100
scale_value = 2.5


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [scale_value]


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), self.scale, BLOCK=128)
        return y
