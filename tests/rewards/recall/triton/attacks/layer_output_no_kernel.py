# task: linear_layernorm
# torch_in_forward: reference_layers
# Every op of the task is a layer the reference instantiates, so the layers alone compute the answer, and a
# kernel launches on a scratch buffer. Stopped by: output provenance (no launched kernel got the output).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scratch_k(s_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(s_ptr + offs, tl.load(s_ptr + offs) * 0.0)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        scratch = torch.zeros(16, device=x.device)
        scratch_k[(1,)](scratch, B=16)
        return self.norm(self.linear(x))
