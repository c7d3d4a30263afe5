import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, tanh-GELU, then a scale (KernelBench level-2 style)."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.linear(x)
        x = F.gelu(x, approximate="tanh")
        return x * self.scale


batch_size = 8
in_features = 32
out_features = 24
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
