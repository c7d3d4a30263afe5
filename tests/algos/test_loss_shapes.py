"""SAPO, GMPO, DPPO and TOPR against hand-computed numbers, the papers' stated properties, and the formulas the peers
publish. The peer numbers below are the published formulas of verl's core_algos.py (compute_policy_loss_sapo,
compute_policy_loss_geo_mean, compute_policy_loss_dppo_tv / _kl; as read in verl's public source, transliterated
here in a few lines each, not run from a verl install) on the float64 tensors of test_policy_losses.py."""

import math

import torch

from rlx.algos.aggregation import aggregate, seq_mean_token_mean, token_mean
from rlx.algos.losses import clipped_surrogate
from rlx.algos.ratio_shapes import (
    DPPO,
    GMPO,
    SAPO,
    TOPR,
    dppo_surrogate,
    gmpo_surrogate,
    sapo_surrogate,
    topr_loss,
)
from tests.algos.test_policy_losses import ADV, ADV_SEQ, LOGP, MASK, OLD

D = torch.float64


def grad_of(fn, logp):
    logp = logp.clone().requires_grad_(True)
    out = fn(logp)
    (grad,) = torch.autograd.grad(out.loss.sum(), logp)
    return out, grad


# ------------------------------------------------------------------------------------------------ SAPO
def test_sapo_hand_computed():
    # ρ = 1: gate σ(0)·4/τ = 2/τ, loss −2A/τ; dgate/dρ = 4σ(1−σ) = 1, so d loss/d log π = −A (REINFORCE's)
    # ρ = 2, A = 1, τ_pos = 1: gate = 4σ(1) = 4·0.7310585786 = 2.9242343145; d/dlogπ = −4σ(1)σ(−1)·ρ = −1.5728954659
    # ρ = 2, A = −1, τ_neg = 1.05: gate = σ(1.05)·4/1.05 = 0.7407748992·3.8095238 = 2.8219996; loss +2.8219996
    logp = torch.log(torch.tensor([[1.0, 2.0, 2.0]], dtype=D))
    adv = torch.tensor([[1.0, 1.0, -1.0]], dtype=D)
    out, grad = grad_of(lambda lp: sapo_surrogate(lp, torch.zeros_like(lp), adv, 1.0, 1.05), logp)
    torch.testing.assert_close(out.loss, torch.tensor([[-2.0, -2.9242343145, 2.8219996163]], dtype=D))
    assert abs(float(grad[0, 0]) + 1.0) < 1e-12 and abs(float(grad[0, 1]) + 1.5728954659) < 1e-9
    assert not (out.clipped_low | out.clipped_high).any()


def test_sapo_gate_is_smooth_and_agrees_with_the_clip_inside_the_band():
    # inside (1 − ε, 1 + ε) the clipped surrogate's gradient is −A·ρ; SAPO's has the same sign (and equals it at
    # ρ = 1). At the band's edge the clip's gradient jumps to 0; SAPO's changes by O(δ) across it (smooth).
    torch.manual_seed(0)
    ratio = 0.8 + 0.4 * torch.rand(4, 50, dtype=D)  # inside (0.8, 1.2)
    adv = torch.randn(4, 50, dtype=D)
    logp = ratio.log()
    _, g_sapo = grad_of(lambda lp: sapo_surrogate(lp, torch.zeros_like(lp), adv, 1.0, 1.05), logp)
    _, g_clip = grad_of(lambda lp: clipped_surrogate(lp, torch.zeros_like(lp), adv, 0.2, 0.2), logp)
    assert (torch.sign(g_sapo) == torch.sign(g_clip)).all() and (g_clip != 0).all()
    edge = torch.log(torch.tensor([[1.2 - 1e-6, 1.2 + 1e-6]], dtype=D))
    one = torch.ones(1, 2, dtype=D)
    _, g_sapo = grad_of(lambda lp: sapo_surrogate(lp, torch.zeros_like(lp), one, 1.0, 1.05), edge)
    _, g_clip = grad_of(lambda lp: clipped_surrogate(lp, torch.zeros_like(lp), one, 0.2, 0.2), edge)
    assert abs(float(g_sapo[0, 0] - g_sapo[0, 1])) < 1e-5  # continuous
    assert float(g_clip[0, 0]) < -1.0 and float(g_clip[0, 1]) == 0.0  # the hard clip jumps


def test_sapo_matches_verls_published_formula():
    # verl compute_policy_loss_sapo: log-ratio clamped to ±20, τ = τ_pos where A > 0 else τ_neg,
    # pg_losses = −σ(τ(ρ − 1))·4/τ·A, aggregated seq-mean-token-mean
    ratio = torch.exp((LOGP - OLD).clamp(-20, 20))
    tau = torch.where(ADV > 0, 1.0, 1.05).to(D)
    verl = -torch.sigmoid(tau * (ratio - 1)) * 4 / tau * ADV
    expected = aggregate(verl, seq_mean_token_mean(MASK))
    got = aggregate(SAPO(1.0, 1.05)(LOGP, OLD, ADV, MASK).loss, seq_mean_token_mean(MASK))
    assert abs(float(got - expected)) < 1e-14


# ------------------------------------------------------------------------------------------------ GMPO
def test_gmpo_hand_computed():
    # log ρ = [0.1, 0.5, −0.6], ε = 0.4. A = +1: min(log ρ, clip) = [0.1, 0.4, −0.6], mean −0.0333,
    # s = e^−0.0333 = 0.9672161, loss −0.9672161 at each token; token 2 (clipped high) has no gradient, the
    # others −s/3 = −0.3224054. A = −1: max(log ρ, clip) = [0.1, 0.5, −0.4], mean 0.0667, s = 1.0689391,
    # loss +1.0689391; token 3 (clipped low) no gradient, the others +s/3 = 0.3563130.
    logp = torch.tensor([[0.1, 0.5, -0.6], [0.1, 0.5, -0.6]], dtype=D)
    adv = torch.tensor([[1.0] * 3, [-1.0] * 3], dtype=D)
    mask = torch.ones(2, 3, dtype=D)
    logp_ = logp.clone().requires_grad_(True)
    out = gmpo_surrogate(logp_, torch.zeros_like(logp), adv, mask, 0.4, 0.4)
    torch.testing.assert_close(out.loss[:, 0], torch.tensor([-0.9672161, 1.0689391], dtype=D), atol=1e-7, rtol=0)
    (grad,) = torch.autograd.grad(aggregate(out.loss, seq_mean_token_mean(mask)) * 2, logp_)  # × S = 2 sequences
    expected = torch.tensor([[-0.3224054, 0.0, -0.3224054], [0.3563130, 0.3563130, 0.0]], dtype=D)
    torch.testing.assert_close(grad, expected, atol=1e-7, rtol=0)
    assert out.clipped_high.tolist() == [[False, True, False], [False, False, False]]
    assert out.clipped_low.tolist() == [[False, False, False], [False, False, True]]


def test_gmpo_matches_verls_published_formula():
    # verl compute_policy_loss_geo_mean: sgn(A)·min(sgn(A)·log ρ, sgn(A)·clamp(log ρ, −ε, ε)), the masked mean over
    # each row (÷ (|y| + 1e-8)), ratio = exp of it, A averaged over the row, loss = mean over rows of −Ā·ratio
    lr = LOGP - OLD
    sgn = torch.sign(ADV_SEQ)
    kept = sgn * torch.minimum(sgn * lr, sgn * lr.clamp(-0.4, 0.4))
    n = MASK.sum(-1)
    verl = (-(ADV_SEQ * MASK).sum(-1) / (n + 1e-8) * torch.exp((kept * MASK).sum(-1) / (n + 1e-8))).mean()
    got = aggregate(GMPO(0.4, 0.4)(LOGP, OLD, ADV_SEQ, MASK).loss, seq_mean_token_mean(MASK))
    assert abs(float(got - verl)) < 1e-7  # verl's 1e-8 in the lengths


# ------------------------------------------------------------------------------------------------ DPPO
def test_dppo_tv_hand_computed():
    # p_old = 0.5. A = +1, p = 0.8: p − p_old = 0.3 > δ = 0.2 → masked (loss 0, no gradient, clipped high).
    # A = +1, p = 0.6: kept, ρ = 1.2, loss −1.2·log 0.6 = 0.6129907, d/dlogπ = −1.2.
    # A = −1, p = 0.2: p − p_old = −0.3 < −0.2 → masked (clipped low). A = −1, p = 0.8: moving up is not its
    # direction, kept: loss +1.6·log 0.8 = −0.3570302, d/dlogπ = +1.6.
    logp = torch.log(torch.tensor([[0.8, 0.6, 0.2, 0.8]], dtype=D))
    old = torch.log(torch.full((1, 4), 0.5, dtype=D))
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]], dtype=D)
    out, grad = grad_of(lambda lp: dppo_surrogate(lp, old, adv, "tv", 0.2, 0.2, 20.0), logp)
    torch.testing.assert_close(out.loss, torch.tensor([[0.0, 0.6129907, 0.0, -0.3570297]], dtype=D), atol=1e-7, rtol=0)
    torch.testing.assert_close(grad, torch.tensor([[0.0, -1.2, 0.0, 1.6]], dtype=D))
    assert out.clipped_high.tolist() == [[True, False, False, False]]
    assert out.clipped_low.tolist() == [[False, False, True, False]]


def test_dppo_kl_hand_computed_and_ratio_cap():
    # binary KL at p_old = 0.5: p = 0.8 → 0.5·log(0.5/0.8) + 0.5·log(0.5/0.2) = 0.2231436 > 0.05 → masked (A > 0);
    # p = 0.55 → 0.0050252 < 0.05 → kept; A > 0 and p = 0.1 < p_old is never masked: loss −0.2·log 0.1 = 0.4605170
    logp = torch.log(torch.tensor([[0.8, 0.55, 0.1]], dtype=D))
    old = torch.log(torch.full((1, 3), 0.5, dtype=D))
    out = dppo_surrogate(logp, old, torch.ones(1, 3, dtype=D), "kl", 0.05, 0.05, 20.0)
    torch.testing.assert_close(
        out.loss, torch.tensor([[0.0, -1.1 * math.log(0.55), 0.4605170]], dtype=D), atol=1e-7, rtol=0
    )
    # the truncated weight: p_old = 0.01, p = 0.5, ρ = 50 → 20; A = −1 moving up is kept: loss 20·log 0.5, grad 20
    lp = torch.log(torch.tensor([[0.5]], dtype=D))
    out, grad = grad_of(
        lambda x: dppo_surrogate(
            x, torch.log(torch.tensor([[0.01]], dtype=D)), -torch.ones(1, 1, dtype=D), "tv", 0.2, 0.2, 20.0
        ),
        lp,
    )
    assert abs(float(out.loss.detach()) - 20 * math.log(0.5)) < 1e-12 and abs(float(grad) - 20.0) < 1e-12


def test_dppo_matches_verls_published_formulas():
    # verl dppo_tv / dppo_kl: valid = (A > 0 ? up-condition : down-condition), loss −A·sg(min(ρ, 20))·log π·valid
    ratio = torch.exp(LOGP - OLD).clamp(max=20.0)
    p, p_old = LOGP.exp(), OLD.exp()
    tv_valid = torch.where(ADV > 0, p - p_old <= 0.2, p - p_old >= -0.2).to(D)
    bkl = p_old * (OLD - LOGP) + (1 - p_old) * torch.log((1 - p_old + 1e-8) / (1 - p + 1e-8))
    kl_valid = torch.where(ADV > 0, (bkl <= 0.05) | (p <= p_old), (bkl <= 0.05) | (p >= p_old)).to(D)
    for divergence, valid in (("tv", tv_valid), ("kl", kl_valid)):
        verl = aggregate(-ADV * ratio * LOGP * valid, token_mean(MASK))
        got = aggregate(
            DPPO(divergence, 0.2 if divergence == "tv" else 0.05, 0.2 if divergence == "tv" else 0.05, 20.0)(
                LOGP, OLD, ADV, MASK
            ).loss,
            token_mean(MASK),
        )
        assert abs(float(got - verl)) < 1e-7, divergence  # verl's 1e-8 inside the binary KL's logs
    assert (tv_valid == 0).any() and (kl_valid == 0).any()  # both masks act on these tensors


# ------------------------------------------------------------------------------------------------ TOPR
def test_topr_hand_computed():
    # row 0: A = +1 → weight 1 whatever the ratio: loss −log π. row 1: A = −1, sequence log-ratio 0.3 + 0.4 = 0.7
    # > 0 → weight min(e^0.7, 1) = 1 (capped: clipped high). row 2: A = −1, log-ratio −0.5 − 0.2 = −0.7 → weight
    # e^−0.7 = 0.4965853; loss +0.4965853·log π per token, gradient 0.4965853.
    # token level (ROLL's): row 1 tokens e^min(0.3, 0) = e^min(0.4, 0) = 1; row 2 e^−0.5 = 0.6065307, e^−0.2 = 0.8187308
    old = torch.log(torch.full((3, 2), 0.5, dtype=D))
    logp = old + torch.tensor([[1.0, -1.0], [0.3, 0.4], [-0.5, -0.2]], dtype=D)
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0], [-1.0, -1.0]], dtype=D)
    mask = torch.ones(3, 2, dtype=D)
    out, grad = grad_of(lambda lp: topr_loss(lp, old, adv, mask, True), logp)
    torch.testing.assert_close(
        grad, torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.4965853] * 2], dtype=D), atol=1e-7, rtol=0
    )
    assert out.clipped_high[1].all() and not out.clipped_high[2].any() and not out.clipped_low.any()
    _, grad = grad_of(lambda lp: topr_loss(lp, old, adv, mask, False), logp)
    torch.testing.assert_close(grad[2], torch.tensor([0.6065307, 0.8187308], dtype=D), atol=1e-7, rtol=0)
    assert isinstance(TOPR("token")(logp, old, adv, mask).loss, torch.Tensor)


def test_every_shape_is_reinforce_at_ratio_one():
    # one update per batch: ρ = 1 and every shape's gradient is −A·∇log π (GMPO's the sequence-mean of it), so the
    # shapes' keys cannot act (rlx.inert says so at start)
    logp = LOGP.clone()
    reinforce = -ADV_SEQ * MASK / (MASK.sum(-1, keepdim=True) * 3)  # seq_mean_token_mean weights, 3 sequences
    for loss in (
        SAPO(1.0, 1.05),
        GMPO(0.4, 0.4),
        DPPO("tv", 0.2, 0.2, 20.0),
        DPPO("kl", 0.05, 0.05, 20.0),
        TOPR("sequence"),
        TOPR("token"),
    ):
        lp = logp.clone().requires_grad_(True)
        value = aggregate(loss(lp, lp.detach(), ADV_SEQ, MASK).loss, seq_mean_token_mean(MASK))
        (grad,) = torch.autograd.grad(value, lp)
        torch.testing.assert_close(grad, reinforce, atol=1e-12, rtol=0, msg=type(loss).__name__)
