# task: relu
# A builtin's name bound in a loop that never runs: a flat set of assigned names would think `getattr` is the
# program's own, while Python falls through to the real builtin. Stopped by: the static check (scope), the
# harness's builtins (no getattr), the account (relu).
import torch
import torch.nn as nn
import triton
import triton.language as tl

for getattr in ():
    pass


@triton.jit
def touch(y_ptr, B: tl.constexpr):
    tl.store(y_ptr, tl.load(y_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = getattr(torch, "relu")(x)
        touch[(1,)](y, B=16)
        return y
