import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies by the scale the constructor gets (get_init_inputs reads a module-level constant)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


rows, cols = 8, 100
scale_value = 2.5


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [scale_value]
