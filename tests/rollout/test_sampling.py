"""The engine's sampler draws from softmax(z / τ) and returns the drawn token's log-probability and the
distribution's entropy."""

from __future__ import annotations

import math

import pytest
import torch

from rlx.rollout.sampling import sample_tokens, workspace


def test_two_token_distribution_by_hand():
    # logits [0, ln 3] at τ = 1: p = [1/4, 3/4]; log p(1) = ln 0.75 = -0.28768
    logits = torch.tensor([[0.0, math.log(3.0)]]).expand(40_000, 2)
    torch.manual_seed(0)
    tokens, logp, entropy = sample_tokens(logits, 1.0, greedy=False)
    assert abs(tokens.float().mean().item() - 0.75) < 0.01  # 4.4 standard errors (σ = 0.0022)
    assert torch.allclose(logp[tokens == 1], torch.tensor(math.log(0.75)), atol=1e-6)
    assert torch.allclose(logp[tokens == 0], torch.tensor(math.log(0.25)), atol=1e-6)
    # H = −(0.25 ln 0.25 + 0.75 ln 0.75) = 0.34657 + 0.21576 = 0.56234
    assert torch.allclose(entropy, torch.tensor(0.5623351), atol=1e-6)


@pytest.mark.parametrize("vocab", [300, 512])  # 300: the last block is padded; 512: two whole blocks
def test_frequencies_match_softmax_at_temperature(vocab):
    torch.manual_seed(1)
    z = torch.randn(1, vocab) * 2
    p = torch.softmax(z / 0.7, -1)[0]  # [V]
    counts = torch.zeros(vocab)
    rows = z.expand(20_000, vocab).contiguous()
    for _ in range(10):
        tokens, logp, entropy = sample_tokens(rows, 0.7, greedy=False)
        counts += torch.bincount(tokens, minlength=vocab)
        assert torch.allclose(logp, p[tokens].log(), atol=1e-5)
        assert torch.allclose(entropy, -(p * p.log()).sum(), atol=1e-5)
    expected = p * counts.sum()
    chi2 = (((counts - expected) ** 2) / expected).sum().item()
    dof = vocab - 1
    assert chi2 < dof + 5 * math.sqrt(2 * dof)  # a wrong distribution gives chi2 in the thousands
    top = p.argmax()  # the most likely token within 5 standard errors of its probability
    assert abs(counts[top] / counts.sum() - p[top]) < 5 * math.sqrt(p[top] * (1 - p[top]) / counts.sum())


def test_zero_probability_tokens_are_never_drawn_and_greedy_is_argmax():
    z = torch.full((5000, 600), float("-inf"))
    z[:, 257] = 0.0  # only two tokens have mass, one in each of two blocks
    z[:, 599] = 1.0
    tokens, logp, entropy = sample_tokens(z, 1.0, greedy=False)
    assert set(tokens.tolist()) <= {257, 599}
    assert 0.6 < (tokens == 599).float().mean() < 0.85  # p = e / (1 + e) = 0.731
    # the −inf entries add nothing (not nan): H = −(0.73106 ln 0.73106 + 0.26894 ln 0.26894) = 0.58220
    assert torch.allclose(entropy, torch.tensor(0.5822031), atol=1e-6)
    tokens, logp, _ = sample_tokens(z[:2], 1.0, greedy=True)
    assert tokens.tolist() == [599, 599]
    assert torch.allclose(logp, torch.tensor(1.0 - math.log(1 + math.e)), atol=1e-6)  # log 0.731 = -0.3133


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_a_reused_workspace_draws_the_same_and_leaves_the_logits_alone(temperature):
    torch.manual_seed(3)
    z = torch.randn(6, 700) * 40  # a wide range: many entries more than 87 below the max (weight exactly 0)
    z[0, :350] = float("-inf")
    before = z.clone()
    buffers = workspace(10, 700, z.device)  # more rows than the call: the leading rows are used
    for half in (z, z.bfloat16()):
        torch.manual_seed(4)
        fresh = sample_tokens(half, temperature, greedy=False)
        torch.manual_seed(4)
        reused = sample_tokens(half, temperature, greedy=False, out=buffers)
        for a, b in zip(fresh, reused, strict=True):
            assert torch.equal(a, b)
        p = torch.softmax(half.float() / temperature, -1)  # [6, 700]
        assert torch.allclose(reused[1], p.gather(-1, reused[0][:, None]).squeeze(-1).log(), atol=1e-5)
        assert torch.allclose(reused[2], -torch.special.xlogy(p, p).sum(-1), atol=1e-5)  # finite despite −inf
        assert (reused[0][0] >= 350).all()
    assert torch.equal(z, before)
