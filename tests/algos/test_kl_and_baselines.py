"""The importance-weighted KL (kl=k3_is) is unbiased on samples of the sampling policy, and its gradient too; the
group advantage's baseline and scale switches reproduce GRPO, Dr. GRPO, RLOO and TRL's batch scaling."""

import torch

from rlx.algos.advantages import (
    GroupNorm,
    group_mean_advantage,
    group_norm_advantage,
    leave_one_out_baseline,
    rloo_advantage,
    scaled_advantage,
)
from rlx.algos.kl import KL, importance_weighted, k3

D = torch.float64


def toy():
    # three categorical distributions over 5 tokens: π_old (the sampler), π_θ (moved by a few updates), π_ref
    old = torch.tensor([0.4, 0.25, 0.15, 0.12, 0.08], dtype=D)
    theta_logits = torch.tensor([-1.0, 0.2, 1.5, 0.0, 0.8], dtype=D, requires_grad=True)
    ref = torch.tensor([0.2, 0.2, 0.2, 0.2, 0.2], dtype=D)
    return old, theta_logits, ref


def test_importance_weighted_k3_is_unbiased_and_plain_k3_is_not():
    old, theta_logits, ref = toy()
    logp = torch.log_softmax(theta_logits, -1)  # [5]
    true_kl = (logp.exp() * (logp - ref.log())).sum()  # KL(π_θ ‖ π_ref)
    # exact expectations over π_old's 5 outcomes
    weighted = (old * importance_weighted(k3(logp, ref.log()), logp, old.log())).sum()
    plain = (old * k3(logp, ref.log())).sum()
    assert abs(float((weighted - true_kl).detach())) < 1e-12  # E_old[ρ·k3] = E_θ[k3] = KL(π_θ ‖ π_ref)
    assert abs(float((plain - true_kl).detach())) > 1e-1  # on π_old's samples plain k3 is off
    # and the gradient: ∇E_old[ρ·k3] = ∇KL(π_θ ‖ π_ref)
    (g_weighted,) = torch.autograd.grad(weighted, theta_logits, retain_graph=True)
    (g_true,) = torch.autograd.grad(true_kl, theta_logits)
    torch.testing.assert_close(g_weighted, g_true, atol=1e-12, rtol=0)


def test_importance_weighted_k3_on_sampled_tokens():
    # 200k tokens drawn from π_old: the sample mean of ρ·k3 is within 4 standard errors of KL(π_θ ‖ π_ref)
    old, theta_logits, ref = toy()
    logp = torch.log_softmax(theta_logits.detach(), -1)
    torch.manual_seed(0)
    y = torch.multinomial(old, 200_000, replacement=True)
    kl = KL(k3, "loss", True)(logp[y][None], ref.log()[y][None], old.log()[y][None])[0]  # [M]
    true_kl = float((logp.exp() * (logp - ref.log())).sum())
    stderr = float(kl.std()) / 200_000**0.5
    assert abs(float(kl.mean()) - true_kl) < 4 * stderr
    plain = KL(k3, "loss", False)(logp[y][None], ref.log()[y][None], old.log()[y][None])[0]
    assert abs(float(plain.mean()) - true_kl) > 10 * stderr  # the bias the weight removes


def test_importance_weight_is_one_on_policy():
    lp = torch.randn(3, 4, dtype=D)
    ref = torch.randn(3, 4, dtype=D)
    assert torch.equal(KL(k3, "reward", True)(lp, ref, lp), k3(lp, ref))


def test_baseline_and_scale_switches():
    # one group [1, 0, 0, 0], population std: mean 0.25, std √(3/16) = 0.4330127
    scores = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0], dtype=D)
    group = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    valid = torch.ones(8, dtype=torch.bool)
    # leave-one-out baseline: sample 0 → mean of [0, 0, 0] = 0; the others → 1/3
    loo = leave_one_out_baseline(scores, group, valid)
    torch.testing.assert_close(loo[:4], torch.tensor([0.0, 1 / 3, 1 / 3, 1 / 3], dtype=D))
    # LOO, scaled by the group std: [1, −1/3, −1/3, −1/3] / (0.4330127 + 1e-6) = [2.3094, −0.7698, ...]
    adv = scaled_advantage(scores, loo, torch.full_like(scores, 0.4330127), valid, 1e-6)
    torch.testing.assert_close(adv[:4], torch.tensor([2.3094, -0.7698, -0.7698, -0.7698], dtype=D), atol=1e-4, rtol=0)
    # scale none + LOO is RLOO exactly (n/(n − 1)·(r − mean)); scale none + mean is Dr. GRPO's group_mean
    torch.testing.assert_close(scaled_advantage(scores, loo, None, valid, 0.0), rloo_advantage(scores, group, valid))
    mean = torch.tensor([0.25] * 4 + [0.75] * 4, dtype=D)
    torch.testing.assert_close(
        scaled_advantage(scores, mean, None, valid, 0.0), group_mean_advantage(scores, group, valid)
    )
    # a group of one valid sample: LOO baseline = its own score, advantage 0
    lone = torch.tensor([True, False, False, False, True, True, True, True])
    assert float(scaled_advantage(scores, leave_one_out_baseline(scores, group, lone), None, lone, 0.0)[0]) == 0.0


class Batch:
    def __init__(self, scores, group, valid):
        self.token_rewards, self.group_index, self.sample_mask = scores[:, None], group, valid
        self.response_mask = torch.ones(len(scores), 1, dtype=scores.dtype)

    def returns_per_sequence(self):
        return self.token_rewards.sum(-1)


def test_group_norm_options_reproduce_the_estimators_they_name():
    torch.manual_seed(0)
    scores = torch.rand(12, dtype=D).round()
    group = torch.arange(3).repeat_interleave(4)
    valid = torch.rand(12) > 0.1
    batch = Batch(scores, group, valid)
    for std in ("population", "unbiased"):
        unbiased = std == "unbiased"
        for scale, batch_scale in (("group", False), ("batch", True)):
            adv, _ = GroupNorm(1e-6, std, scale, "mean")(batch)
            torch.testing.assert_close(
                adv[:, 0], group_norm_advantage(scores, group, valid, 1e-6, unbiased, batch_scale)
            )
    adv, _ = GroupNorm(1e-6, "population", "none", "mean")(batch)
    torch.testing.assert_close(adv[:, 0], group_mean_advantage(scores, group, valid))
    adv, _ = GroupNorm(1e-6, "population", "none", "leave_one_out")(batch)
    torch.testing.assert_close(adv[:, 0], rloo_advantage(scores, group, valid))
