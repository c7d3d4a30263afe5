import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, MaxPool2d, then sigmoid and a scale (KernelBench level-2 style: ops outside the modules)."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_size)
        self.scale = scale

    def forward(self, x):
        x = self.pool(self.conv(x))
        return torch.sigmoid(x) * self.scale


batch_size = 2
in_channels = 3
out_channels = 6
height, width = 12, 12
kernel_size = 3
pool_size = 2
scale = 2.0


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size, scale]
