"""The clipped surrogate, KL estimators and aggregation modes against hand-computed numbers and verl's."""

import math

import torch

from rlx.algos.aggregation import aggregate, seq_mean_token_mean, seq_sum_constant, token_mean
from rlx.algos.kl import k1, k2, k3
from rlx.algos.losses import clipped_surrogate, reinforce_loss


def test_clipped_surrogate_hand_computed():
    # ratios 1.5, 0.5, 1.1 with eps 0.2 and advantages +1, -1, +2:
    #   token 0: min(1.5*1, 1.2*1) = 1.2 -> loss -1.2 (clipped, high side)
    #   token 1: min(0.5*-1, 0.8*-1) = -0.8 -> loss 0.8 (clipped, low side)
    #   token 2: min(1.1*2, 1.1*2) = 2.2 -> loss -2.2 (inside the band)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))
    old = torch.zeros(1, 3)
    adv = torch.tensor([[1.0, -1.0, 2.0]])
    out = clipped_surrogate(logp, old, adv, 0.2, 0.2)
    torch.testing.assert_close(out.loss, torch.tensor([[-1.2, 0.8, -2.2]]))
    assert out.clipped_high.tolist() == [[True, False, False]]
    assert out.clipped_low.tolist() == [[False, True, False]]


def test_clip_higher_uses_separate_upper_bound():
    # DAPO: epsilon 0.2, epsilon_high 0.28 -> ratio 1.25 with A > 0 is not clipped, ratio 1.3 is clipped at 1.28
    logp = torch.log(torch.tensor([[1.25, 1.3, 0.75]]))
    out = clipped_surrogate(logp, torch.zeros(1, 3), torch.ones(1, 3), 0.2, 0.28)
    torch.testing.assert_close(out.loss, torch.tensor([[-1.25, -1.28, -0.75]]))
    assert out.clipped_high.tolist() == [[False, True, False]]
    assert not out.clipped_low.any()  # ratio 0.75 < 0.8 with A > 0: the min keeps the unclipped branch


def _grad(logp_value: float, adv: float, eps: float = 0.2) -> float:
    logp = torch.tensor([[logp_value]], requires_grad=True)
    clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([[adv]]), eps, eps).loss.sum().backward()
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
    surrogate = clipped_surrogate(logp, logp.detach(), adv[:, None], 0.2, 0.2).loss
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


def test_kl_estimators_match_verl():
    # verl b178a3cd verl/trainer/ppo/core_algos.py kl_penalty(logprob, ref_logprob, "k1" | "k2" | "k3") on
    # these tensors (float64); k3 there also clamps the output at 10, which these values never reach
    logp = torch.tensor([[-1.0, -0.5, -2.0], [-0.7, -1.2, -0.1], [-0.4, -1.5, -2.2]], dtype=torch.float64)
    ref = torch.tensor([[-1.1, -0.2, -2.5], [-0.9, -1.0, -0.4], [-0.4, -1.0, -1.2]], dtype=torch.float64)
    verl_k1 = [[0.1, -0.3, 0.5], [0.2, -0.2, 0.3], [0.0, -0.5, -1.0]]
    verl_k2 = [[0.005, 0.045, 0.125], [0.02, 0.02, 0.045], [0.0, 0.125, 0.5]]
    verl_k3 = [
        [0.0048374180, 0.0498588076, 0.1065306597],
        [0.0187307531, 0.0214027582, 0.0408182207],
        [0.0, 0.1487212707, 0.7182818285],
    ]
    for mine, theirs in ((k1, verl_k1), (k2, verl_k2), (k3, verl_k3)):
        torch.testing.assert_close(mine(logp, ref), torch.tensor(theirs, dtype=torch.float64), atol=1e-9, rtol=0)


def test_k3_is_non_negative_and_finite_far_off():
    logp = torch.linspace(-40, 0, 50)[None, :]
    ref = torch.linspace(0, -40, 50)[None, :]
    value = k3(logp, ref)
    assert (value >= 0).all() and torch.isfinite(value).all()


def test_aggregation_modes_hand_computed():
    # seq 0 has tokens [1, 2, 3]; seq 1 has [4] (two padding positions hold junk that must be ignored)
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 99.0, 99.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert float(aggregate(loss, token_mean(mask))) == 10 / 4  # (1+2+3+4) / 4 tokens
    assert float(aggregate(loss, seq_mean_token_mean(mask))) == (2.0 + 4.0) / 2  # mean(2, 4)
    assert float(aggregate(loss, seq_sum_constant(mask, 8.0))) == (6 / 8 + 4 / 8) / 2


def test_aggregation_skips_empty_sequences():
    loss = torch.tensor([[1.0, 3.0], [5.0, 5.0]])
    mask = torch.tensor([[1, 1], [0, 0]])
    assert float(aggregate(loss, seq_mean_token_mean(mask))) == 2.0
    assert float(aggregate(loss, seq_sum_constant(mask, 4.0))) == 1.0
    assert float(aggregate(loss, token_mean(mask))) == 2.0


def test_aggregation_matches_verl_agg_loss():
    # verl b178a3cd core_algos.agg_loss(L, mask, mode) on these tensors: token-mean 1.9444444444,
    # seq-mean-token-mean 2.1249999916 (verl adds 1e-8 to each sequence's token count),
    # seq-mean-token-sum-norm with loss_scale_factor 4: 4.375 = rlx's seq_sum_constant × 3 sequences
    # (rlx also divides by the number of sequences, TRL's convention)
    loss = torch.tensor([[1.0, 2.0, 3.0, 9.0], [4.0, 0.5, -1.0, 2.0], [0.0, 6.0, 9.0, 9.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.float64)
    assert abs(float(aggregate(loss, token_mean(mask))) - 1.9444444444444444) < 1e-12
    assert abs(float(aggregate(loss, seq_mean_token_mean(mask))) - 2.124999991631945) < 1e-7
    assert abs(float(aggregate(loss, seq_sum_constant(mask, 4.0))) * 3 - 4.375) < 1e-12


def test_weights_sum_to_the_whole_minibatch_whatever_the_split():
    # the weights of a minibatch, sliced by rows, add up to exactly the minibatch's aggregate
    torch.manual_seed(0)
    loss = torch.randn(6, 5, dtype=torch.float64)
    mask = (torch.rand(6, 5) > 0.3).to(torch.float64)
    mask[2] = 0  # an empty sequence
    for weights in (token_mean(mask), seq_mean_token_mean(mask), seq_sum_constant(mask, 5.0)):
        whole = aggregate(loss, weights)
        parts = sum(aggregate(loss[rows], weights[rows]) for rows in ([0, 1], [2, 3, 4], [5]))
        torch.testing.assert_close(parts, whole, atol=1e-12, rtol=0)
