"""Reward shaping and masking on the batch, before advantages: reward clipping, DAPO's soft overlong
punishment and overlong filtering (arXiv 2503.14476, §3.4). The raw scores stay in `batch.rewards` (logged
as reward/mean and used by the curriculum); the shaped ones enter the per-token rewards.

Shapes: N completions.
"""

from __future__ import annotations

import torch
from torch import Tensor


def clip_rewards(rewards: Tensor, low: float | None, high: float | None) -> Tensor:
    """r ← clip(r, low, high); a bound of None leaves that side open."""
    if low is None and high is None:
        return rewards  # [N]
    return rewards.clamp(min=low, max=high)  # [N]


def soft_overlong_penalty(lengths: Tensor, max_length: int, cache_length: int) -> Tensor:
    """DAPO eq. 13, the length-aware penalty added to the reward:

        R(y) = 0                                 if |y| ≤ L_max − L_cache
             = ((L_max − L_cache) − |y|) / L_cache   if L_max − L_cache < |y| ≤ L_max
             = −1                                if |y| > L_max

    Args: lengths: [N] completion lengths in tokens. Returns: penalty [N] in [−1, 0].
    """
    start = max_length - cache_length
    lengths = lengths.to(torch.float32)  # [N]
    ramp = (start - lengths) / cache_length  # [N]
    penalty = torch.where(lengths <= start, torch.zeros_like(lengths), ramp)  # [N]
    return torch.where(lengths > max_length, torch.full_like(lengths, -1.0), penalty)  # [N]


def overlong_filter(valid: Tensor, truncated: Tensor) -> Tensor:
    """DAPO's overlong filtering: truncated completions are masked out. rlx masks them from the loss *and*
    from their group's statistics (their reward says nothing about the answer they did not finish)."""
    return valid & ~truncated  # [N]


class RewardShaping:
    """The `algo.shaping` node. Each option is off when null/false, so one node serves every preset."""

    def __init__(self, clip_low: float | None, clip_high: float | None, overlong_max_length: int | None,
                 overlong_cache_length: int | None, overlong_filter: bool) -> None:
        if clip_low is not None and clip_high is not None and clip_low > clip_high:
            raise ValueError(f"algo.shaping.clip_low={clip_low} > algo.shaping.clip_high={clip_high}; swap them")
        if overlong_max_length is not None and not (
                overlong_cache_length is not None and 0 < overlong_cache_length <= overlong_max_length):
            raise ValueError(
                f"algo.shaping.overlong_cache_length must be in (0, overlong_max_length={overlong_max_length}] "
                f"(got {overlong_cache_length}); DAPO uses 4096 of 20480. Set overlong_max_length=null to disable")
        self.clip_low, self.clip_high = clip_low, clip_high
        self.max_length, self.cache_length = overlong_max_length, overlong_cache_length
        self.filter_truncated = overlong_filter

    @property
    def active(self) -> bool:
        return (self.clip_low is not None or self.clip_high is not None or self.max_length is not None
                or self.filter_truncated)

    def __call__(self, batch) -> tuple[Tensor, Tensor]:
        """Returns: shaped rewards [N], sample mask [N] (the valid samples the loss and the advantages see;
        batch.valid itself is left as it is, so reward metrics still count truncated samples)."""
        rewards = clip_rewards(batch.rewards, self.clip_low, self.clip_high)  # [N]
        if self.max_length is not None:
            # |y| counts the answer's tokens, not the eos that ends it (rlx's choice): a completion that
            # stops exactly at L_max − L_cache tokens is not punished, a truncated one is.
            lengths = batch.response_mask.sum(-1) - (~batch.truncated).long()  # [N]
            rewards = rewards + soft_overlong_penalty(lengths, self.max_length, self.cache_length).to(rewards.dtype)
        keep = overlong_filter(batch.valid, batch.truncated) if self.filter_truncated else batch.valid
        return rewards, keep
