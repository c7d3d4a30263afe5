import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear then LayerNorm: two layers with weights."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(self.linear(x))


batch_size, in_features, out_features = 6, 20, 12


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
