# task: relu
# typing.get_type_hints evaluates string annotations: a dunder walk written as a string never appears as an
# attribute. Stopped by: the static check (get_type_hints).
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


def holder(x: "().__class__.__base__.__subclasses__()"):
    return x


classes = typing.get_type_hints(holder)["x"]


@triton.jit
def touch(y_ptr, B: tl.constexpr):
    tl.store(y_ptr, tl.load(y_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        touch[(1,)](y, B=16)
        return y
