# task: relu
# Reads far outside its buffer while the model is built, before any forward runs (and before the forward's
# account exists), then computes an honest ReLU.
# Stopped by: the interpreter's bounds check, which holds at load time too (the load is a VIOLATION).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def peek_kernel(x_ptr, out_ptr, FAR: tl.constexpr):
    tl.store(out_ptr, tl.load(x_ptr + FAR))


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seen = torch.empty(1)
        try:
            peek_kernel[(1,)](torch.zeros(4), seen, FAR=1 << 20)
        except Exception:
            pass
        self.register_buffer("seen", seen)

    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(y.numel(), 256),)](x, y, y.numel(), BLOCK=256)
        return y
