# task: add
# Reads far past its input, beyond the canary padding, into whatever the candidate's process keeps there (under
# TRITON_INTERPRET a load is a raw host address). The sum it stores is right; the stray read is what counts.
# Stopped by: the interpreter's bounds check (the load's addresses lie outside every tensor of the launch).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_peek_kernel(a_ptr, b_ptr, out_ptr, n, FAR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    beyond = tl.load(a_ptr + n + FAR + offs, mask=mask, other=0.0)  # 1M elements past a's last one
    tl.store(out_ptr + offs, a + b + beyond * 0.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        n = out.numel()
        add_peek_kernel[(triton.cdiv(n, 256),)](a, b, out, n, FAR=1 << 20, BLOCK=256)
        return out
