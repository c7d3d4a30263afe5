# task: relu
# The grid callable calls the kernel itself, as a Python function, over the whole tensor in one go; the
# launch it sizes then runs a program that does nothing. Stopped by: the launch check (a @triton.jit function
# called outside a kernel body; the harness also evaluates the grid before the interpreter's launch, where
# triton.language is not running on the host).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_k(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)

        def grid(meta):
            relu_k(x, y, x.numel(), 2048)
            return (1,)

        relu_k[grid](x, y, 0, B=16)
        return y
