import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d then MaxPool2d, nothing else: every op runs inside a module (5 of KernelBench level 2's 100 are
    built this way)."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_size)

    def forward(self, x):
        return self.pool(self.conv(x))


batch_size = 2
in_channels = 3
out_channels = 6
height, width = 12, 12
kernel_size = 3
pool_size = 2


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
