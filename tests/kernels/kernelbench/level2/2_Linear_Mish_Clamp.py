import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A linear layer whose output goes through Mish and is then clamped to a range.
    """
    def __init__(self, in_features, out_features, low, high):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.low = low
        self.high = high

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.mish(x)
        return torch.clamp(x, min=self.low, max=self.high)

batch_size = 512
in_features = 1024
out_features = 2048
low = -0.25
high = 2.0

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, low, high]
