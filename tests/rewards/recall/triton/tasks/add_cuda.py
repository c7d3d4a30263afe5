import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        return a + b


def get_inputs():
    # written for a GPU, as KernelBench's own examples are: the inputs are moved to CUDA
    a = torch.randn(4, 250).cuda()
    b = torch.randn(4, 250).cuda()
    return [a, b]


def get_init_inputs():
    return []
