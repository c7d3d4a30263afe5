import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GEGLU's product: tanh-approximated GELU of the gate times the up projection."""

    def forward(self, gate, up):
        return F.gelu(gate, approximate="tanh") * up


batch, seq, hidden = 2, 6, 80


def get_inputs():
    return [torch.randn(batch, seq, hidden), torch.randn(batch, seq, hidden)]


def get_init_inputs():
    return []
