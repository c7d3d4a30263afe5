# task: swiglu
# In the style of unsloth's kernels (kernels/swiglu.py): a private `_fg_kernel` over flat elements with the
# sigmoid in float32, a host function named after it, the output allocated with the input's shape.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _fg_kernel(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr,):
    block_idx = tl.program_id(0)
    offsets = block_idx*BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    e_row = tl.load(e + offsets, mask = mask, other = 0).to(tl.float32)
    g_row = tl.load(g + offsets, mask = mask, other = 0)

    # f = e * sigmoid(e)
    f_row = e_row * tl.sigmoid(e_row)
    f_row = f_row.to(g_row.dtype)
    # h = f * g
    h_row = f_row * g_row

    tl.store(h + offsets, h_row, mask = mask)
pass


def swiglu_fg_kernel(e, g):
    batch, seq_len, hd = e.shape
    n_elements = e.numel()
    h = torch.empty((batch, seq_len, hd), dtype = e.dtype, device = e.device)
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)
    _fg_kernel[grid](e, g, h, n_elements, BLOCK_SIZE = 256,)
    return h
pass


class ModelNew(nn.Module):
    def forward(self, gate, up):
        return swiglu_fg_kernel(gate, up)
