# task: conv_relu_bias
# The level-2 answer that keeps nn.Conv2d, scored under the default torch_in_forward=kernels_only: the conv is
# torch compute there. Stopped by: the account.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bias_kernel(x_ptr, bias_ptr, out_ptr, n_elements, hw, channels, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    channel = (offs // hw) % channels
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) + tl.load(bias_ptr + channel, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        out = torch.empty_like(x)
        n = x.numel()
        relu_bias_kernel[(triton.cdiv(n, 256),)](x, self.bias, out, n, x.shape[2] * x.shape[3], x.shape[1], BLOCK=256)
        return out
