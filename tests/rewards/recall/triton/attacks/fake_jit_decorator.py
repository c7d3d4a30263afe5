# task: relu
# A decorator of its own named `jit` wraps triton.jit, so a name-based check would take the function for a
# checked kernel, while its body is Python calling a helper that computes in torch.
# Stopped by: the launch check (the launched function is no kernel def), the account (relu).
import torch
import torch.nn as nn
import triton
import triton.language as tl

box = {}


def jit(fn):
    return triton.jit(fn)


def helper():
    box["y"].copy_(torch.relu(box["x"]))


@jit
def relu_k(x_ptr, y_ptr, n, B: tl.constexpr):
    helper()


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        box["x"], box["y"] = x, y
        relu_k[(1,)](x, y, x.numel(), B=16)
        return y
