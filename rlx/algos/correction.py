"""Rollout correction (the `rollout_correction` config group): a per-token weight that multiplies the policy
loss, making up for the sampler (rollout engine) and the trainer disagreeing on the very same weights.

Three log-probs of each completion token meet in an update, and they are not interchangeable:
- μ (`sampler_logp`, RolloutBatch.sampler_logp): the rollout engine's own log-prob of the token it drew (vLLM's,
  rlx's engine's, HF generate's scores), the distribution the token was really drawn from (the behaviour policy);
- π_old (`old_logp`): the trainer's forward of the same weights (rlx.update.prepare), or μ itself where the engine
  vouches that they are equal to float rounding (rollout=engine in float32: `RolloutBatch.sampling_logp`);
- π_θ (`logp`): the trainer's forward of the weights being updated.
PPO's ratio ρ = π_θ / π_old stays the policy loss's (clipped there); the correction weight here is built from
π_old / μ (the mismatch), detached, and multiplies the loss token by token: decoupled PPO (Hilton et al. 2021,
arXiv 2110.00641), as in verl's rollout correction and Yao et al. 2025, "Your efficient RL framework secretly
brings you off-policy RL training" (TIS). Where the batch has no μ, μ := π_old (weight 1 for the ratio-based
corrections).

Every weight function is row-local (a sequence's weight reads only its own row), so micro-batching by rows
leaves the loss exact, as for the losses (rlx.algos.losses). Shapes: N sequences, T completion tokens.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def token_tis(log_ratio: Tensor, cap: float) -> Tensor:
    """Token-level truncated importance sampling (Yao et al. 2025, TIS; verl rollout_is=token):

        w_t = min(π_old(y_t) / μ(y_t), C)

    Args: log_ratio [N, T] log π_old − log μ; cap C > 0. Returns: w [N, T]."""
    return torch.exp(log_ratio.clamp(max=math.log(cap)))  # [N, T] exp(min(log r, log C)) = min(r, C), no overflow


def sequence_tis(log_ratio: Tensor, mask: Tensor, cap: float) -> Tensor:
    """Sequence-level truncated importance sampling (Li et al. 2025, "When speed kills stability", Seq-TIS;
    verl rollout_is=sequence):

        w_i = min(Π_t π_old(y_t) / μ(y_t), C)   on every token of sequence i

    Args: log_ratio, mask [N, T]; cap C. Returns: w [N, T]."""
    seq = (log_ratio * mask).sum(-1, keepdim=True)  # [N, 1] log Π_t r_t
    return torch.exp(seq.clamp(max=math.log(cap))).expand_as(log_ratio)  # [N, T]


def token_mis(log_ratio: Tensor, low: float, high: float) -> Tensor:
    """Token-level masked importance sampling: the IS weight where it lies in [low, high], 0 elsewhere
    (Li et al. 2025, Token-MIS; with [0.5, 5] it is IcePop, Ling team 2025, arXiv 2510.18855 §2.2,
    M(k) = k if k ∈ [α, β] else 0):

        w_t = r_t · 1[low ≤ r_t ≤ high],   r_t = π_old(y_t) / μ(y_t)

    Args: log_ratio [N, T]; 0 ≤ low < high. Returns: w [N, T]."""
    ratio = torch.exp(log_ratio.clamp(max=math.log(high) + 1.0))  # [N, T] finite: above `high` it is masked anyway
    keep = (ratio >= low) & (ratio <= high)  # [N, T]
    return torch.where(keep, ratio, torch.zeros_like(ratio))  # [N, T]


def sequence_mis(log_ratio: Tensor, mask: Tensor, low: float, high: float) -> Tensor:
    """Sequence-level masked importance sampling (Li et al. 2025, Seq-MIS): the sequence's IS weight where it
    lies in [low, high], else the whole sequence is masked:

        w_i = R_i · 1[low ≤ R_i ≤ high],   R_i = Π_t π_old(y_t) / μ(y_t)

    Args: log_ratio, mask [N, T]; 0 ≤ low < high. Returns: w [N, T]."""
    seq = (log_ratio * mask).sum(-1, keepdim=True)  # [N, 1] log R_i
    return token_mis(seq, low, high).expand_as(log_ratio)  # [N, T]


def off_policy_sequence_mask(logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor, delta: float):
    """DeepSeek-V3.2's off-policy sequence masking (arXiv 2512.02556, §3.1 "Keep off-policy sequence mask"):
    a negative-advantage token of a sequence the current policy has moved far from is dropped,

        M_i,t = 0  if A_i,t < 0 and (1/|y_i|) Σ_t log(μ(y_t) / π_θ(y_t)) > δ,   else 1

    with μ the sampler's log-probs and π_θ the policy being updated (detached), so it also catches the drift of
    later minibatches and epochs of one batch.

    Args: logp (π_θ, detached), sampler_logp (μ), advantages, mask: [N, T]; δ ≥ 0. Returns: M [N, T]."""
    tokens = mask.sum(-1, keepdim=True).clamp(min=1)  # [N, 1] |y_i|
    divergence = ((sampler_logp - logp) * mask).sum(-1, keepdim=True) / tokens  # [N, 1]
    drop = (advantages < 0) & (divergence > delta)  # [N, T]
    return (~drop).to(logp.dtype)  # [N, T]


class NoCorrection:
    """rollout_correction=none: no weight (c = 1 everywhere, so the objective skips the product and logs no
    loss/correction_* columns: the default run's metrics.csv has none)."""

    def __call__(
        self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor
    ) -> Tensor | None:
        return None


def check_cap(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"rollout_correction.{name} must be > 0 (got {value}); verl's default is 2")


def check_bounds(low: float, high: float) -> None:
    if not 0 <= low < high:
        raise ValueError(
            f"rollout_correction needs 0 <= low < high (got low={low}, high={high}); IcePop uses low=0.5, high=5"
        )


class TokenTIS:
    """rollout_correction=token_tis."""

    def __init__(self, cap: float) -> None:
        check_cap("cap", cap)
        self.cap = cap

    def __call__(self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor):
        return token_tis(old_logp - sampler_logp, self.cap)


class SequenceTIS(TokenTIS):
    """rollout_correction=sequence_tis."""

    def __call__(self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor):
        return sequence_tis(old_logp - sampler_logp, mask, self.cap)


class TokenMIS:
    """rollout_correction=token_mis (and icepop, its [0.5, 5] preset)."""

    def __init__(self, low: float, high: float) -> None:
        check_bounds(low, high)
        self.low, self.high = low, high

    def __call__(self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor):
        return token_mis(old_logp - sampler_logp, self.low, self.high)


class SequenceMIS(TokenMIS):
    """rollout_correction=sequence_mis."""

    def __call__(self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor):
        return sequence_mis(old_logp - sampler_logp, mask, self.low, self.high)


class OffPolicySequenceMask:
    """rollout_correction=off_policy_mask (DeepSeek-V3.2)."""

    def __init__(self, delta: float) -> None:
        if not delta >= 0:
            raise ValueError(f"rollout_correction.delta must be >= 0 (got {delta})")
        self.delta = delta

    def __call__(self, logp: Tensor, old_logp: Tensor, sampler_logp: Tensor, advantages: Tensor, mask: Tensor):
        return off_policy_sequence_mask(logp, sampler_logp, advantages, mask, self.delta)
