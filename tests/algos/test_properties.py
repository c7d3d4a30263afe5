"""The seed's properties: clip one-sidedness (with clip-higher), surrogate = REINFORCE at θ = θ_old under every
preset's aggregation, baselines leave the policy gradient unbiased (Monte Carlo), all-equal groups give zero
gradient under every group estimator, KL estimators against their formulas and the true KL."""

import math

import torch

from rlx.algos.advantages import component_norm_advantage, group_mean_advantage, group_norm_advantage, rloo_advantage
from rlx.algos.aggregation import aggregate, seq_mean_token_mean, seq_sum_constant, token_mean
from rlx.algos.kl import k1, k2, k3
from rlx.algos.losses import CISPO, GSPO, Clip, DualClip, clipped_surrogate, reinforce_loss
from rlx.algos.returns import reinforce_pp_baseline_advantage
from rlx.algos.token_class import token_class_advantage

AGGREGATIONS = {
    "token_mean (DAPO, PPO)": lambda loss, mask: aggregate(loss, token_mean(mask)),
    "seq_mean_token_mean (GRPO)": lambda loss, mask: aggregate(loss, seq_mean_token_mean(mask)),
    "seq_sum_constant (Dr. GRPO, REINFORCE)": lambda loss, mask: aggregate(loss, seq_sum_constant(mask, 4.0)),
}
RATIO_LOSSES = {
    "clip": Clip(0.2, 0.28),
    "dual_clip": DualClip(0.2, 0.28, 3.0),
    "gspo": GSPO(3e-4, 4e-4),
    "cispo": CISPO(1.0, 0.2),
}


def grad_of(logp_value: float, adv: float, epsilon: float, epsilon_high: float) -> float:
    logp = torch.tensor([[logp_value]], requires_grad=True)
    clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([[adv]]), epsilon, epsilon_high).loss.sum().backward()
    return float(logp.grad)


def test_clip_higher_is_one_sided_on_each_bound():
    # epsilon 0.2, epsilon_high 0.28. d loss / d logp = -A * ratio where unclipped, 0 where clipped
    assert grad_of(math.log(1.25), +1.0, 0.2, 0.28) == -1.25  # inside the raised upper bound: still pushed
    assert grad_of(math.log(1.30), +1.0, 0.2, 0.28) == 0.0  # beyond 1.28 with A > 0: clipped
    assert grad_of(math.log(0.75), -1.0, 0.2, 0.28) == 0.0  # below 0.8 with A < 0: clipped
    assert abs(grad_of(math.log(1.30), -1.0, 0.2, 0.28) - 1.3) < 1e-6  # A < 0 above the band: never clipped
    assert abs(grad_of(math.log(0.75), +1.0, 0.2, 0.28) + 0.75) < 1e-6  # A > 0 below the band: never clipped


def test_every_ratio_loss_is_reinforce_at_theta_old_under_every_aggregation():
    # at θ = θ_old every ratio (token or sequence) is 1, nothing is clipped, and each loss's gradient is the
    # policy gradient -A ∇log π aggregated the same way
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 6, requires_grad=True)  # 3 sequences, 4 tokens, vocabulary 6
    actions = torch.randint(0, 6, (3, 4))
    adv = torch.randn(3, 1).expand(3, 4)  # [3, 4] sequence advantages broadcast to tokens
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    for name, agg in AGGREGATIONS.items():
        logp = torch.log_softmax(logits, -1).gather(-1, actions[..., None]).squeeze(-1)
        (g_pg,) = torch.autograd.grad(agg(reinforce_loss(logp, adv), mask), logits)
        for loss_name, policy_loss in RATIO_LOSSES.items():
            logp = torch.log_softmax(logits, -1).gather(-1, actions[..., None]).squeeze(-1)  # [3, 4]
            out = policy_loss(logp, logp.detach(), adv, mask)
            assert not (out.clipped_low | out.clipped_high).any()
            (g_loss,) = torch.autograd.grad(agg(out.loss, mask), logits)
            torch.testing.assert_close(g_loss, g_pg, msg=f"{loss_name} under {name}")


def test_baselines_leave_the_policy_gradient_unbiased():
    # a categorical policy over 4 actions with rewards r(a); the true gradient of E[r] w.r.t. the logits is
    # d/dθ_j Σ_a π_a r_a = π_j (r_j - E[r]). Estimate it from samples with no baseline, a constant baseline
    # (the running mean is fixed before the batch) and the leave-one-out group baseline (RLOO, G = 4).
    torch.manual_seed(0)
    theta = torch.tensor([0.5, -0.2, 0.1, 0.8], requires_grad=True)
    r = torch.tensor([1.0, 0.0, 2.0, 0.5])
    pi = torch.softmax(theta.detach(), 0)
    true = pi * (r - (pi * r).sum())
    groups, g = 50_000, 4
    actions = torch.multinomial(pi, groups * g, replacement=True)  # [S]
    rewards = r[actions]  # [S]
    group_index = torch.arange(groups).repeat_interleave(g)
    valid = torch.ones(groups * g, dtype=torch.bool)
    estimates = {}
    for name, adv in (
        ("none", rewards),
        ("constant 0.9", rewards - 0.9),
        ("rloo", rloo_advantage(rewards, group_index, valid)),
    ):
        logp = torch.log_softmax(theta, 0)[actions]  # [S]
        (grad,) = torch.autograd.grad(-reinforce_loss(logp, adv).mean(), theta)
        estimates[name] = grad
        # standard error of each coordinate is below 0.005 here; 0.02 is 4 standard errors
        torch.testing.assert_close(grad, true, atol=0.02, rtol=0, msg=name)
    assert (estimates["constant 0.9"] - true).abs().max() < 0.02


def test_all_equal_groups_give_zero_gradient_under_every_group_estimator():
    torch.manual_seed(0)
    logits = torch.randn(8, 3, 5, requires_grad=True)
    actions = torch.randint(0, 5, (8, 3))
    mask = torch.ones(8, 3)
    groups = torch.arange(2).repeat_interleave(4)
    valid = torch.ones(8, dtype=torch.bool)
    rewards = torch.tensor([1.0] * 4 + [0.0] * 4)  # both groups all-equal
    estimators = {
        "group_norm": group_norm_advantage(rewards, groups, valid, 1e-6, False, False),
        "group_norm (unbiased, batch std)": group_norm_advantage(rewards, groups, valid, 1e-6, True, True),
        "group_mean": group_mean_advantage(rewards, groups, valid),
        "rloo": rloo_advantage(rewards, groups, valid),
        "component_norm": component_norm_advantage(
            torch.stack([rewards, 2 * rewards], 1), torch.ones(2), groups, valid, 1e-4, True
        ),
        "reinforce_pp_baseline": reinforce_pp_baseline_advantage(rewards[:, None] * mask, mask, groups, valid, True)[
            :, 0
        ],
    }
    for name, adv in estimators.items():
        assert torch.equal(adv, torch.zeros(8)), name
        logp = torch.log_softmax(logits, -1).gather(-1, actions[..., None]).squeeze(-1)
        loss = clipped_surrogate(logp, logp.detach(), adv[:, None].expand(8, 3), 0.2, 0.28).loss
        for agg in AGGREGATIONS.values():
            (grad,) = torch.autograd.grad(agg(loss, mask), logits, retain_graph=True)
            assert torch.count_nonzero(grad) == 0, name
    # token-class credit: every class all-equal within its group -> zero advantage on every token
    scores = torch.stack([rewards, 1 - rewards], 1)  # [8, 2]
    classes = torch.randint(0, 2, (8, 3))
    assert torch.count_nonzero(token_class_advantage(scores, classes, mask, groups, valid, None)) == 0


def test_kl_estimators_formulas_and_monte_carlo():
    # hand: log π = -1, log π_ref = -2 -> log q = -1: k1 = 1, k2 = 0.5, k3 = e^-1 - 1 + 1 = 0.36788
    logp, ref = torch.tensor([[-1.0]]), torch.tensor([[-2.0]])
    assert float(k1(logp, ref)) == 1.0 and float(k2(logp, ref)) == 0.5
    assert abs(float(k3(logp, ref)) - math.exp(-1)) < 1e-6
    # over random log-probs k3 >= 0 everywhere, k1 and k3 are unbiased for KL(π ‖ π_ref) on samples from π
    torch.manual_seed(0)
    assert (k3(torch.randn(1000, 7) * 5, torch.randn(1000, 7) * 5) >= 0).all()
    pi = torch.tensor([0.5, 0.3, 0.2])
    pref = torch.tensor([0.2, 0.3, 0.5])
    true_kl = float((pi * (pi / pref).log()).sum())  # 0.5 ln 2.5 - 0.2 ln 2.5 = 0.27489
    a = torch.multinomial(pi, 400_000, replacement=True)
    lp, lr = pi.log()[a][None], pref.log()[a][None]
    assert abs(float(k1(lp, lr).mean()) - true_kl) < 0.005
    assert abs(float(k3(lp, lr).mean()) - true_kl) < 0.005
    assert float(k2(lp, lr).mean()) > 0  # k2 is biased (low variance); it is only checked against its formula
