import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear and an nn.ReLU module, then a scale outside them."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.relu = nn.ReLU()
        self.scale = scale

    def forward(self, x):
        return self.relu(self.linear(x)) * self.scale


batch_size = 8
in_features = 32
out_features = 24
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
