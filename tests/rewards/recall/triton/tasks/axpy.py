import torch
import torch.nn as nn

alpha = 0.75


class Model(nn.Module):
    def forward(self, x, y):
        return alpha * x + y


n = 777


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
