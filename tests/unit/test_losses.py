"""The clipped surrogate, KL estimators and aggregation modes against hand-computed numbers."""

import math

import torch

from rlx.algos.aggregation import seq_mean_token_mean, seq_sum_constant, token_mean
from rlx.algos.kl import k1, k2, k3
from rlx.algos.losses import clipped_surrogate, reinforce_loss


def test_clipped_surrogate_hand_computed():
    # ratios 1.5, 0.5, 1.1 with eps 0.2 and advantages +1, -1, +2:
    #   token 0: min(1.5*1, 1.2*1) = 1.2 -> loss -1.2 (clipped)
    #   token 1: min(0.5*-1, 0.8*-1) = -0.8 -> loss 0.8 (clipped)
    #   token 2: min(1.1*2, 1.1*2) = 2.2 -> loss -2.2 (inside the band)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))
    old = torch.zeros(1, 3)
    adv = torch.tensor([[1.0, -1.0, 2.0]])
    loss, clipped = clipped_surrogate(logp, old, adv, 0.2, 0.2)
    torch.testing.assert_close(loss, torch.tensor([[-1.2, 0.8, -2.2]]))
    assert clipped.tolist() == [[True, True, False]]


def test_clip_higher_uses_separate_upper_bound():
    # DAPO: eps_low 0.2, eps_high 0.28 -> ratio 1.25 with A > 0 is not clipped, ratio 1.3 is clipped at 1.28
    logp = torch.log(torch.tensor([[1.25, 1.3, 0.75]]))
    loss, clipped = clipped_surrogate(logp, torch.zeros(1, 3), torch.ones(1, 3), 0.2, 0.28)
    torch.testing.assert_close(loss, torch.tensor([[-1.25, -1.28, -0.75]]))
    assert clipped.tolist() == [[False, True, False]]


def _grad(logp_value: float, adv: float, eps: float = 0.2) -> float:
    logp = torch.tensor([[logp_value]], requires_grad=True)
    loss, _ = clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([[adv]]), eps, eps)
    loss.sum().backward()
    return float(logp.grad)


def test_clip_is_one_sided():
    assert _grad(math.log(1.5), +1.0) == 0.0  # A > 0 and ratio > 1 + eps: no push further up
    assert _grad(math.log(0.5), -1.0) == 0.0  # A < 0 and ratio < 1 - eps: no push further down
    # the other sides still get the unclipped gradient -A * ratio
    assert abs(_grad(math.log(1.5), -1.0) - 1.5) < 1e-6
    assert abs(_grad(math.log(0.5), +1.0) - (-0.5)) < 1e-6
    assert abs(_grad(math.log(1.1), +2.0) - (-2.2)) < 1e-6  # inside the band: -A * ratio


def test_surrogate_gradient_equals_policy_gradient_at_theta_old():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, requires_grad=True)
    actions = torch.tensor([1, 4, 2])
    adv = torch.tensor([0.7, -1.3, 0.4])
    logp = torch.log_softmax(logits, -1)[torch.arange(3), actions][:, None]  # [3, 1]
    surrogate, _ = clipped_surrogate(logp, logp.detach(), adv[:, None], 0.2, 0.2)
    (g_surrogate,) = torch.autograd.grad(surrogate.mean(), logits)
    logp2 = torch.log_softmax(logits, -1)[torch.arange(3), actions][:, None]
    (g_pg,) = torch.autograd.grad(reinforce_loss(logp2, adv[:, None]).mean(), logits)
    torch.testing.assert_close(g_surrogate, g_pg)


def test_kl_estimators_match_their_formulas():
    logp = torch.tensor([[-1.0, -2.0, -0.5]])
    ref = torch.tensor([[-1.5, -1.0, -0.5]])
    log_q = ref - logp  # [-0.5, 1.0, 0.0]
    torch.testing.assert_close(k1(logp, ref), -log_q)
    torch.testing.assert_close(k2(logp, ref), 0.5 * log_q**2)
    torch.testing.assert_close(k3(logp, ref), torch.exp(log_q) - 1 - log_q)
    # k3 by hand at log q = 1: e - 2
    assert abs(float(k3(logp, ref)[0, 1]) - (math.e - 2)) < 1e-6
    assert float(k3(logp, ref)[0, 2]) == 0.0


def test_k3_is_non_negative_and_finite_far_off():
    logp = torch.linspace(-40, 0, 50)[None, :]
    ref = torch.linspace(0, -40, 50)[None, :]
    value = k3(logp, ref)
    assert (value >= 0).all() and torch.isfinite(value).all()


def test_aggregation_modes_hand_computed():
    # seq 0 has tokens [1, 2, 3]; seq 1 has [4] (two padding positions hold junk that must be ignored)
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 99.0, 99.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert float(token_mean(loss, mask)) == 10 / 4  # (1+2+3+4) / 4 tokens
    assert float(seq_mean_token_mean(loss, mask)) == (2.0 + 4.0) / 2  # mean(2, 4)
    assert float(seq_sum_constant(loss, mask, 8.0)) == (6 / 8 + 4 / 8) / 2


def test_aggregation_skips_empty_sequences():
    loss = torch.tensor([[1.0, 3.0], [5.0, 5.0]])
    mask = torch.tensor([[1, 1], [0, 0]])
    assert float(seq_mean_token_mean(loss, mask)) == 2.0
    assert float(seq_sum_constant(loss, mask, 4.0)) == 1.0
    assert float(token_mean(loss, mask)) == 2.0
