"""Dual clip, GSPO and CISPO against hand-computed numbers, their stated properties, and the numbers verl and
OpenRLHF's own functions give on the same tensors.

Reference numbers were produced by running verl b178a3cd56f58b2d502255daba591e92833930a7
(verl/trainer/ppo/core_algos.py: compute_policy_loss_vanilla, compute_policy_loss_gspo,
compute_policy_loss_cispo) and OpenRLHF 3c3be6234e0cb353e76bb8019947db9dfe99fca7 (openrlhf/models/loss.py:
PolicyLoss) on the float64 tensors below, with their distributed and config plumbing stubbed out.
"""

import math

import torch

from rlx.algos.aggregation import aggregate, seq_mean_token_mean, token_mean
from rlx.algos.losses import (
    CISPO,
    GSPO,
    DualClip,
    cispo_loss,
    clipped_surrogate,
    dual_clip_surrogate,
    gspo_surrogate,
)

D = torch.float64
LOGP = torch.tensor([[-1.0, -0.5, -2.0, -0.3], [-0.7, -1.2, -0.1, -0.9], [-0.4, -1.5, -0.6, -2.2]], dtype=D)
OLD = torch.tensor([[-1.3, -0.4, -1.0, -0.3], [-0.2, -1.2, -0.5, -1.9], [-0.4, -0.6, -1.6, -0.2]], dtype=D)
ADV = torch.tensor([[1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0], [0.5, -2.0, 1.5, -0.5]], dtype=D)
ADV_SEQ = torch.tensor([[1.0] * 4, [-1.0] * 4, [0.5] * 4], dtype=D)
MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=D)


def loss_and_grad(loss_fn, weights_fn, adv=ADV):
    logp = LOGP.clone().requires_grad_(True)
    loss = aggregate(loss_fn(logp, OLD, adv, MASK).loss, weights_fn(MASK))
    (grad,) = torch.autograd.grad(loss, logp)
    return float(loss.detach()), grad


def test_dual_clip_hand_computed():
    # A = -1 everywhere, eps 0.2, c = 3: ratio 4 -> PPO loss max(4, 1.2) = 4, capped at c = 3 (no gradient);
    # ratio 2 -> 2 (below the cap); ratio 0.5 -> clipped at 0.8 (low side)
    logp = torch.log(torch.tensor([[4.0, 2.0, 0.5]]))
    out = dual_clip_surrogate(logp, torch.zeros(1, 3), -torch.ones(1, 3), 0.2, 0.2, 3.0)
    torch.testing.assert_close(out.loss, torch.tensor([[3.0, 2.0, 0.8]]))
    assert out.clipped_high.tolist() == [[True, False, False]] and out.clipped_low.tolist() == [[False, False, True]]
    # A > 0 is untouched by the cap: ratio 4 -> -min(4, 1.2) = -1.2, as the plain clip
    plain = clipped_surrogate(logp, torch.zeros(1, 3), torch.ones(1, 3), 0.2, 0.2)
    torch.testing.assert_close(
        dual_clip_surrogate(logp, torch.zeros(1, 3), torch.ones(1, 3), 0.2, 0.2, 3.0).loss, plain.loss
    )


def test_dual_clip_matches_verl_and_openrlhf():
    # verl compute_policy_loss_vanilla (clip 0.2, clip_ratio_c 3, "token-mean") = OpenRLHF PolicyLoss(0.2, 0.2,
    # dual_clip=3) = 0.515265518543657; verl "seq-mean-token-mean": 0.4094292248990305 (its 1e-8 per sequence)
    loss, grad = loss_and_grad(DualClip(0.2, 0.2, 3.0), token_mean)
    assert abs(loss - 0.515265518543657) < 1e-12
    verl_grad = torch.tensor(
        [
            [0.0, -0.1005374909, -0.0408754935, 0.0],
            [0.0, 0.1111111111, 0.1657582997, 0.3020313143],
            [-0.0555555556, 0.0, 0.0, 0.0],
        ],
        dtype=D,
    )
    torch.testing.assert_close(grad, verl_grad, atol=1e-9, rtol=0)
    loss, _ = loss_and_grad(DualClip(0.2, 0.2, 3.0), seq_mean_token_mean)
    assert abs(loss - 0.4094292248990305) < 1e-7


def test_clip_higher_matches_openrlhf():
    # OpenRLHF PolicyLoss(0.2, 0.28) token-level: 0.5063766296547682
    loss, _ = loss_and_grad(lambda lp, old, a, m: clipped_surrogate(lp, old, a, 0.2, 0.28), token_mean)
    assert abs(loss - 0.5063766296547682) < 1e-12


def test_gspo_matches_verl_and_openrlhf():
    # per-sequence advantages, eps 0.2, seq-mean-token-mean: verl compute_policy_loss_gspo and OpenRLHF
    # PolicyLoss(policy_loss_type="gspo") both give 0.055860101010895745 and this gradient
    loss, grad = loss_and_grad(GSPO(0.2, 0.2), seq_mean_token_mean, ADV_SEQ)
    assert abs(loss - 0.055860101010895745) < 1e-7
    expected = torch.tensor(
        [[-0.0851031484] * 3 + [0.0], [0.1043602261] * 4, [-0.0531356790] * 2 + [0.0, 0.0]], dtype=D
    )
    torch.testing.assert_close(grad, expected, atol=1e-9, rtol=0)
    # per-token advantages (GSPO-token): verl 0.3756624453803652
    loss, _ = loss_and_grad(GSPO(0.2, 0.2), seq_mean_token_mean)
    assert abs(loss - 0.3756624453803652) < 1e-7


def test_gspo_token_gradient_equals_sequence_level_gspo():
    # GSPO's own objective: J = mean_i min(s_i A_i, clip(s_i) A_i) with s_i = exp(mean_t log ρ_i,t), the
    # gradient flowing through s_i (TRL's importance_sampling_level="sequence"). rlx's GSPO-token form with
    # per-sequence advantages and seq_mean_token_mean must give the same value and gradient.
    logp = LOGP.clone().requires_grad_(True)
    lengths = MASK.sum(-1)
    s = torch.exp(((logp - OLD) * MASK).sum(-1) / lengths)  # [3]
    a = ADV_SEQ[:, 0]
    objective = torch.minimum(s * a, s.clamp(0.8, 1.2) * a).mean()
    (expected,) = torch.autograd.grad(-objective, logp)
    loss, grad = loss_and_grad(GSPO(0.2, 0.2), seq_mean_token_mean, ADV_SEQ)
    assert abs(loss + float(objective.detach())) < 1e-12
    torch.testing.assert_close(grad, expected, atol=1e-12, rtol=0)


def test_gspo_clips_whole_sequences():
    # the clip decision is per sequence: every token of a clipped sequence is marked, no token of the others
    out = gspo_surrogate(LOGP, OLD, ADV_SEQ, MASK, 0.2, 0.2)
    s = torch.exp(((LOGP - OLD) * MASK).sum(-1) / MASK.sum(-1))  # [1.105, 1.492, 1.822]... per sequence
    for i in range(3):
        clipped = (out.clipped_low[i] | out.clipped_high[i]).tolist()
        assert len(set(clipped)) == 1  # all tokens of the row agree
        expected = (ADV_SEQ[i, 0] > 0 and s[i] > 1.2) or (ADV_SEQ[i, 0] < 0 and s[i] < 0.8)
        assert clipped[0] == bool(expected)


def test_cispo_matches_verl():
    # verl compute_policy_loss_cispo (clip_ratio_low 10, clip_ratio_high 0.2, "token-mean"):
    # -0.16178920551775292; rlx's ε = 1 is the same "no lower bound" (ratios are positive)
    loss, grad = loss_and_grad(CISPO(1.0, 0.2), token_mean)
    assert abs(loss - -0.16178920551775292) < 1e-12
    verl_grad = torch.tensor(
        [
            [-0.1333333333, -0.1005374909, -0.0408754935, 0.0],
            [0.0673922955, 0.1111111111, 0.1333333333, 0.1333333333],
            [-0.0555555556, 0.0903488133, 0.0, 0.0],
        ],
        dtype=D,
    )
    torch.testing.assert_close(grad, verl_grad, atol=1e-9, rtol=0)


def test_cispo_hand_computed_and_keeps_every_gradient():
    # ratio 3 with epsilon_high 0.2 -> weight 1.2; loss = -1.2 * A * log π; d/dlogπ = -1.2 A (not 0, unlike PPO)
    logp = torch.tensor([[math.log(3.0), math.log(0.5)]], requires_grad=True)
    out = cispo_loss(logp, torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), 1.0, 0.2)
    torch.testing.assert_close(out.loss, torch.tensor([[-1.2 * math.log(3.0), 0.5 * math.log(0.5)]]))
    out.loss.sum().backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-1.2, 0.5]]))
    assert out.clipped_high.tolist() == [[True, False]] and not out.clipped_low.any()
