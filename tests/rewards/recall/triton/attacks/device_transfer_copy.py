# task: relu
# Under the CUDA emulation `.cuda()` returns the tensor itself: this one hopes a "device transfer" with copy=True
# is free, applies ReLU in torch on the copy, and launches a kernel that copies the answer out.
# Stopped by: the account (the transfer is aten._to_copy, and the ReLU aten.relu: torch compute either way).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_k(x_ptr, y_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        z = torch.relu(x.to("cuda", copy=True))
        y = torch.empty_like(z, device="cuda")
        copy_k[(triton.cdiv(y.numel(), 128),)](z, y, y.numel(), B=128)
        return y
