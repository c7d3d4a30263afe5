"""Policy losses: per-token loss matrices [N, T]; aggregation over tokens happens in `aggregation.py`."""

from __future__ import annotations

import torch
from torch import Tensor


def clipped_surrogate(logp: Tensor, old_logp: Tensor, advantages: Tensor, eps_low: float, eps_high: float):
    """PPO's clipped surrogate (arXiv 1707.06347, eq. 7), negated to a loss, per token:

        ρ = exp(log π_θ − log π_old),  L = −min(ρ·A, clip(ρ, 1 − ε_low, 1 + ε_high)·A)

    With ε_high > ε_low this is DAPO's clip-higher (arXiv 2503.14476, §3.1). The log-ratio is not clamped
    (TRL's choice; verl and OpenRLHF clamp it to ±20): the clip already zeroes the gradient where it matters.

    Args: logp, old_logp, advantages: [N, T].
    Returns: loss [N, T], clipped [N, T] (bool: tokens where the clipped branch was taken).
    """
    ratio = torch.exp(logp - old_logp)  # [N, T]
    unclipped = ratio * advantages  # [N, T]
    clipped_ratio = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)  # [N, T]
    clipped_obj = clipped_ratio * advantages  # [N, T]
    loss = -torch.minimum(unclipped, clipped_obj)  # [N, T]
    return loss, (clipped_obj < unclipped)  # [N, T], [N, T]


def reinforce_loss(logp: Tensor, advantages: Tensor) -> Tensor:
    """REINFORCE (Williams 1992) with a baseline already inside A: L = −A · log π_θ(y_t | x, y<t)."""
    return -advantages * logp  # [N, T]


class ClippedRatio:
    """policy_loss for PPO, GRPO, Dr. GRPO and DAPO."""

    uses_old_logp = True

    def __init__(self, epsilon: float, epsilon_high: float) -> None:
        if not 0 < epsilon < 1 or epsilon_high <= 0:
            raise ValueError(f"algo.epsilon must be in (0, 1) and algo.epsilon_high > 0 (got {epsilon}, {epsilon_high})")
        self.epsilon, self.epsilon_high = epsilon, epsilon_high

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor) -> tuple[Tensor, Tensor]:
        return clipped_surrogate(logp, old_logp, advantages, self.epsilon, self.epsilon_high)


class PolicyGradient:
    """policy_loss for REINFORCE: no ratio and no clip, so it is meant for one update per batch."""

    uses_old_logp = False

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor) -> tuple[Tensor, Tensor]:
        return reinforce_loss(logp, advantages), torch.zeros_like(logp, dtype=torch.bool)
