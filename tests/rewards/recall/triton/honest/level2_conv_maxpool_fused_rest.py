# task: conv_maxpool_sigmoid_scale
# torch_in_forward: reference_layers
# A KernelBench level-2 answer that keeps both of the reference's modules, nn.Conv2d and the parameter-free
# nn.MaxPool2d, and fuses what follows them (sigmoid, scale) into one kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_scale_kernel(x_ptr, out_ptr, n_elements, scale, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.sigmoid(x) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_size)
        self.scale = scale

    def forward(self, x):
        x = self.pool(self.conv(x)).contiguous()
        out = torch.empty_like(x)
        n_elements = out.numel()
        sigmoid_scale_kernel[(triton.cdiv(n_elements, 256),)](x, out, n_elements, self.scale, BLOCK_SIZE=256)
        return out
