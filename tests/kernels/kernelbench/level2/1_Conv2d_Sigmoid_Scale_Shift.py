import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Convolves the input, squashes it with a sigmoid, scales it and adds a learned per-channel shift.
    """
    def __init__(self, in_channels, out_channels, kernel_size, scale, shift_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.shift = nn.Parameter(torch.randn(shift_shape) * 0.1)

    def forward(self, x):
        x = self.conv(x)
        x = torch.sigmoid(x) * self.scale
        return x + self.shift

batch_size = 64
in_channels = 16
out_channels = 32
height, width = 96, 160
kernel_size = 3
scale = 1.5
shift_shape = (out_channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale, shift_shape]
