"""The fused head over vocabulary blocks (rlx.forward.head): several row chunks by several vocabulary blocks,
with the normaliser accumulated online, give the full log-softmax's values, entropies and gradients."""

from __future__ import annotations

import pytest
import torch

import rlx.forward.head as head_module
from rlx.forward.head import head_logprobs


@pytest.fixture
def tiles(monkeypatch):
    # 11 columns in blocks of 4, 4, 3; 8 logits a tile: 2 rows a chunk, so 7 rows make chunks 2, 2, 2, 1
    monkeypatch.setattr(head_module, "VOCAB_BLOCK", 4)
    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", 8)


def reference(hidden, weight, targets, temperature):
    full = torch.log_softmax((hidden @ weight.T) / temperature, -1)  # [M, V]
    return full.gather(-1, targets[:, None]).squeeze(-1), -(full.exp() * full).sum(-1)


def inputs(dtype=torch.float64):
    torch.manual_seed(0)
    hidden = (3 * torch.randn(7, 5, dtype=dtype)).requires_grad_()  # large logits: the running maximum moves
    weight = torch.randn(11, 5, dtype=dtype, requires_grad=True)
    targets = torch.tensor([0, 10, 4, 3, 7, 8, 4])  # in every block, at their edges too
    return hidden, weight, targets


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_tiled_values_and_entropy_equal_the_full_log_softmax(tiles, temperature):
    hidden, weight, targets = inputs()
    logp, entropy = head_logprobs(hidden, weight, targets, temperature, with_entropy=True)
    expected_logp, expected_entropy = reference(hidden, weight, targets, temperature)
    torch.testing.assert_close(logp, expected_logp, atol=1e-12, rtol=0)
    torch.testing.assert_close(entropy, expected_entropy, atol=1e-12, rtol=0)


@pytest.mark.parametrize("entropy", ["none", "metric", "grad"])  # the kept tiles are exps, or logits for "grad"
@pytest.mark.parametrize("keep", [True, False])
def test_tiled_gradients_equal_the_full_log_softmax(tiles, monkeypatch, entropy, keep):
    monkeypatch.setattr(head_module, "KEEP_LOGITS_BYTES", 1 << 20 if keep else 0)
    hidden, weight, targets = inputs()
    entropy_grad = entropy == "grad"
    logp, entropy = head_logprobs(
        hidden, weight, targets, 0.7, with_entropy=entropy != "none", entropy_grad=entropy_grad
    )
    expected_logp, expected_entropy = reference(hidden, weight, targets, 0.7)
    loss, expected = (logp**2).sum(), (expected_logp**2).sum()
    if entropy_grad:  # an entropy bonus weighted per position
        loss = loss + 0.3 * (entropy * torch.arange(7)).sum()
        expected = expected + 0.3 * (expected_entropy * torch.arange(7)).sum()
    grads = torch.autograd.grad(loss, (hidden, weight))
    torch.testing.assert_close(grads, torch.autograd.grad(expected, (hidden, weight)), atol=1e-12, rtol=0)


def test_tiled_gradients_pass_gradcheck(tiles, monkeypatch):
    monkeypatch.setattr(head_module, "KEEP_LOGITS_BYTES", 0)  # gradcheck runs many backwards: recompute mode
    hidden, weight, targets = inputs()
    assert torch.autograd.gradcheck(lambda h, w: head_logprobs(h, w, targets, 0.7)[0], (hidden, weight))
