"""Policy losses (the `policy_loss` config group): per-token loss matrices [N, T]; aggregation over tokens
happens in `aggregation.py`.

Every loss has the signature (logp, old_logp, advantages, mask) → PolicyLoss(loss [N, T], clipped_low [N, T],
clipped_high [N, T]). The mask is there so a sequence-level loss (GSPO) is one function; a loss may only reduce
within a row (never across rows), so micro-batching by rows leaves it exact. `clipped_low` / `clipped_high` mark
the tokens where the clip took the gradient away below 1 − ε / above 1 + ε_high (logged as
loss/clipfrac_low, loss/clipfrac_high).

rlx's choice, pinned by tests: the log-ratio is not clamped before the exponential (TRL's choice; verl and
OpenRLHF clamp it to ±20): the clip already zeroes the gradient where it matters.
Shapes: N sequences, T completion tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class PolicyLoss(NamedTuple):
    loss: Tensor  # [N, T] per-token loss (to be aggregated)
    clipped_low: Tensor  # [N, T] bool: the ratio's lower clip removed this token's gradient
    clipped_high: Tensor  # [N, T] bool: the ratio's upper clip removed this token's gradient


def clipped_surrogate(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, epsilon: float, epsilon_high: float
) -> PolicyLoss:
    """PPO's clipped surrogate (arXiv 1707.06347, eq. 7), negated to a loss, per token:

        ρ = exp(log π_θ − log π_old),  L = −min(ρ·A, clip(ρ, 1 − ε, 1 + ε_high)·A)

    With ε_high > ε this is DAPO's clip-higher (arXiv 2503.14476, §3.1). The clipped branch is taken (and
    the gradient is 0) where A > 0 and ρ > 1 + ε_high (high side) or A < 0 and ρ < 1 − ε (low side).
    """
    ratio = torch.exp(logp - old_logp)  # [N, T]
    unclipped = ratio * advantages  # [N, T]
    clipped_obj = ratio.clamp(1.0 - epsilon, 1.0 + epsilon_high) * advantages  # [N, T]
    taken = clipped_obj < unclipped  # [N, T] the min picked the clipped branch
    return PolicyLoss(-torch.minimum(unclipped, clipped_obj), taken & (ratio < 1.0), taken & (ratio > 1.0))


def dual_clip_surrogate(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, epsilon: float, epsilon_high: float, clip_c: float
) -> PolicyLoss:
    """Dual-clip PPO (Ye et al. 2019, arXiv 1912.09729, eq. 5): for A < 0 the clipped loss is bounded as well,

        L = −min(ρA, clip(ρ, 1 − ε, 1 + ε_high)A)            if A ≥ 0
        L = min(−min(ρA, clip(ρ, 1 − ε, 1 + ε_high)A), −c·A)  if A < 0

    so a token whose ratio has grown far above 1 with a negative advantage (ρ > c) cannot dominate the batch:
    its loss is capped at −c·A and its gradient is 0 (verl applies this always with clip_ratio_c = 3; OpenRLHF
    on request). Tokens capped by c count as clipped on the high side.
    """
    ppo = clipped_surrogate(logp, old_logp, advantages, epsilon, epsilon_high)  # [N, T] each
    cap = -clip_c * advantages  # [N, T]
    capped = (advantages < 0) & (ppo.loss > cap)  # [N, T]
    loss = torch.where(capped, cap, ppo.loss)  # [N, T]
    return PolicyLoss(loss, ppo.clipped_low, ppo.clipped_high | capped)


def gspo_surrogate(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, epsilon: float, epsilon_high: float
) -> PolicyLoss:
    """GSPO (Zheng et al. 2025, arXiv 2507.18071), in its GSPO-token form (§4.3):

        s_i = exp( (1/|y_i|) Σ_t log(π_θ(y_i,t)/π_old(y_i,t)) )        the sequence-level ratio
        s_i,t = sg[s_i] · π_θ(y_i,t) / sg[π_θ(y_i,t)]                   (value s_i, gradient s_i ∇log π_θ(y_i,t))
        L_i,t = −min(s_i,t·A_i,t, clip(s_i,t, 1 − ε, 1 + ε_high)·A_i,t)

    The clip decision is per sequence (s_i,t = s_i in value). With a per-sequence advantage and the
    seq_mean_token_mean aggregation (the gspo preset) the gradient equals GSPO's sequence-level objective
    −min(s_i A_i, clip(s_i) A_i) averaged over sequences exactly; per-token advantages give GSPO-token.
    The paper's ε are tiny (3e-4 / 4e-4) because s_i is a per-token geometric mean.
    """
    mask = mask.to(logp.dtype)  # [N, T]
    seq_log_ratio = ((logp - old_logp) * mask).sum(-1) / mask.sum(-1).clamp(min=1)  # [N]
    log_s = seq_log_ratio.detach()[:, None] + logp - logp.detach()  # [N, T] value log s_i, grad ∇log π_θ
    return clipped_surrogate(log_s, torch.zeros_like(log_s), advantages, epsilon, epsilon_high)


def cispo_loss(logp: Tensor, old_logp: Tensor, advantages: Tensor, epsilon: float, epsilon_high: float) -> PolicyLoss:
    """CISPO (MiniMax-M1, arXiv 2506.13585, eq. 4): REINFORCE weighted by a clipped, detached importance ratio,

        L = −sg(clip(ρ, 1 − ε, 1 + ε_high)) · A · log π_θ(y_t)

    Unlike PPO's clip, no token loses its gradient: the clip only bounds its weight. The paper sets no lower
    bound (ε large: 1 − ε ≤ 0, e.g. ε = 1); verl's example uses ε = 10, ε_high = 0.2.
    `clipped_*` marks tokens whose weight was clipped (their gradient is scaled, not removed).
    """
    ratio = torch.exp(logp - old_logp).detach()  # [N, T]
    weight = ratio.clamp(1.0 - epsilon, 1.0 + epsilon_high)  # [N, T]
    return PolicyLoss(-weight * advantages * logp, ratio < weight, ratio > weight)


def reinforce_loss(logp: Tensor, advantages: Tensor) -> Tensor:
    """REINFORCE (Williams 1992) with a baseline already inside A: L = −A · log π_θ(y_t | x, y<t)."""
    return -advantages * logp  # [N, T]


def check_epsilons(epsilon: float, epsilon_high: float) -> None:
    if not 0 < epsilon <= 1 or epsilon_high <= 0:
        raise ValueError(
            "algo.epsilon must be in (0, 1] (1: no lower bound) and algo.epsilon_high > 0 "
            f"(got {epsilon}, {epsilon_high})"
        )


class Clip:
    """policy_loss=clip (PPO, GRPO, Dr. GRPO, DAPO)."""

    uses_old_logp = True
    reads_epsilon = True  # algo.epsilon / epsilon_high reach it (rlx.inert: a loss without them says so)

    def __init__(self, epsilon: float, epsilon_high: float) -> None:
        check_epsilons(epsilon, epsilon_high)
        self.epsilon, self.epsilon_high = epsilon, epsilon_high

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return clipped_surrogate(logp, old_logp, advantages, self.epsilon, self.epsilon_high)


class DualClip(Clip):
    """policy_loss=dual_clip: the clipped ratio with negative-advantage tokens capped at c (verl's c = 3)."""

    def __init__(self, epsilon: float, epsilon_high: float, clip_c: float) -> None:
        super().__init__(epsilon, epsilon_high)
        if clip_c <= 1:
            raise ValueError(f"policy_loss.clip_c must be > 1 (got {clip_c}); verl and the paper use 3")
        self.clip_c = clip_c

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return dual_clip_surrogate(logp, old_logp, advantages, self.epsilon, self.epsilon_high, self.clip_c)


class GSPO(Clip):
    """policy_loss=gspo: the clipped sequence-level ratio."""

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return gspo_surrogate(logp, old_logp, advantages, mask, self.epsilon, self.epsilon_high)


class CISPO:
    """policy_loss=cispo: a clipped, detached IS weight on REINFORCE (algo.epsilon = 1: no lower bound, the
    paper's setting)."""

    uses_old_logp = True
    reads_epsilon = True

    def __init__(self, epsilon: float, epsilon_high: float) -> None:
        check_epsilons(epsilon, epsilon_high)
        self.epsilon, self.epsilon_high = epsilon, epsilon_high

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return cispo_loss(logp, old_logp, advantages, self.epsilon, self.epsilon_high)


class Reinforce:
    """policy_loss=reinforce: no ratio and no clip, so it is meant for one update per batch."""

    uses_old_logp = False
    reads_epsilon = False

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        never = torch.zeros_like(logp, dtype=torch.bool)  # [N, T]
        return PolicyLoss(reinforce_loss(logp, advantages), never, never)
