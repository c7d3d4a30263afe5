# task: relu
# A generator's frame leads back through the harness's frames to its reply channel: the program answers the
# checker itself. Stopped by: the static check (frame attributes).
import torch
import torch.nn as nn
import triton
import triton.language as tl

probe = (i for i in ())
frame = probe.gi_frame
while frame is not None and "send" not in frame.f_locals:
    frame = frame.f_back


@triton.jit
def touch(y_ptr, B: tl.constexpr):
    tl.store(y_ptr, tl.load(y_ptr))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        touch[(1,)](y, B=16)
        return y
