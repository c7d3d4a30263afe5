import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A grouped 2D convolution with a wide, dilated kernel and no bias.

    Args:
        in_channels (int): Channels of the input.
        out_channels (int): Channels of the output.
        kernel_size (tuple): (kernel height, kernel width).
        dilation (tuple): (dilation along the height, dilation along the width).
        groups (int): How many groups the channels are split into.
    """
    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, dilation: tuple, groups: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, dilation=dilation, groups=groups, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_channels, height_out, width_out).
        """
        return self.conv(x)

# Sizes
batch_size = 24
in_channels = 48
out_channels = 96
kernel_size = (3, 7)
dilation = (1, 4)
groups = 12
height = 192
width = 320

def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, dilation, groups]
