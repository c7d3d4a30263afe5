# task: scale_from_init
# Rebinds the task's names: its own get_init_inputs (another scale), get_inputs and the constant the task's
# get_init_inputs reads. The harness takes those names from the task as the task file bound them, so the
# constructor still gets the task's scale (2.5) and this kernel computes the task's answer: full credit, which it
# would not get if the rebinding counted.
import torch
import torch.nn as nn
import triton
import triton.language as tl

scale_value = 0.0


def get_init_inputs():
    return [1.0]


def get_inputs():
    return [torch.zeros(8, 100)]


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
