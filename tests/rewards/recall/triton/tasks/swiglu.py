import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SwiGLU's gate: silu(gate) * up."""

    def forward(self, gate, up):
        return F.silu(gate) * up


batch, seq, inter = 2, 5, 96


def get_inputs():
    return [torch.randn(batch, seq, inter), torch.randn(batch, seq, inter)]


def get_init_inputs():
    return []
