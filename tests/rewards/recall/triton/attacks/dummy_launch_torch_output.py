# task: relu
# A kernel launches on a scratch buffer so that a launch is counted; the answer comes from a torch op.
# Stopped by: the account (clamp_min), output provenance (the result never went to a kernel).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scratch_k(s_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(s_ptr + offs, tl.load(s_ptr + offs) * 0.0)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.zeros(16, device=x.device)
        scratch_k[(1,)](scratch, B=16)
        return torch.clamp_min(x, 0.0)
