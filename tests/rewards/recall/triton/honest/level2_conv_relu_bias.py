# task: conv_relu_bias
# torch_in_forward: reference_layers
# A KernelBench level-2 answer: the reference's nn.Conv2d stays, ReLU and the bias are fused in one kernel.
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
    b = tl.load(bias_ptr + channel, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 256
        relu_bias_kernel[(triton.cdiv(n, BLOCK),)](
            x, self.bias, out, n, x.shape[2] * x.shape[3], x.shape[1], BLOCK=BLOCK
        )
        return out
