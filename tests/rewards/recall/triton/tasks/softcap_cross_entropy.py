import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Per-row cross entropy of soft-capped logits (Gemma 2's softcap * tanh(logits / softcap))."""

    def __init__(self, softcap):
        super().__init__()
        self.softcap = softcap

    def forward(self, logits, labels):
        logits = self.softcap * torch.tanh(logits / self.softcap)
        return F.cross_entropy(logits, labels, reduction="none")


rows, vocab = 12, 300
softcap = 30.0


def get_inputs():
    return [torch.randn(rows, vocab) * 20, torch.randint(0, vocab, (rows,))]


def get_init_inputs():
    return [softcap]
