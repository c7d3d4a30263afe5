import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        return a + b


size = 1000


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return []
