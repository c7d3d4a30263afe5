"""The sampler–trainer mismatch, measured every step: how far the rollout engine's log-probs of its own tokens
(μ, `RolloutBatch.sampler_logp`) are from the trainer's forward of the same weights (π_old, `old_logp`).

With identical weights the two differ only by arithmetic (another kernel, precision, batch shape or summation
order): in float32 by ~1e-6, in bf16 by up to ~0.1 nats, and by much more when the engine holds stale weights
(a weight sync that did not happen). The metrics (`rollout/` prefix, over completion tokens):
    logprob_abs_diff_max, logprob_abs_diff_mean   |log π_old − log μ|
    mismatch_kl          k3 = r − 1 − log r, r = π_old / μ, per-token mean: an unbiased estimate of
                         KL(μ ‖ π_old) from tokens drawn from μ (Schulman 2020, "Approximating KL divergence")
    mismatch_ratio_outside_frac   the fraction of tokens with r outside [0.5, 2]
They are logged where the trainer ran its own forward; where the engine's log-probs stood in for it
(`rollout.reuse_logprobs` on an engine that vouches for float rounding, RolloutBatch.sampling_logp) there is
nothing to compare. Shapes: N sequences, T completion tokens.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

RATIO_BAND = (0.5, 2.0)  # r outside it: the sampler and the trainer disagree by more than a factor of 2


def mismatch_metrics(sampler_logp: Tensor, trainer_logp: Tensor, mask: Tensor) -> dict[str, Tensor]:
    """The metrics above over the tokens of `mask`; all 0 (a labelled zero) when the mask is empty.

    Args: sampler_logp (μ), trainer_logp (π_old), mask: [N, T]. Returns: scalar tensors keyed by metric name."""
    keep = mask > 0  # [N, T]
    log_ratio = (trainer_logp - sampler_logp)[keep].double()  # [M] log r, in float64: k3 of tiny r − 1
    if log_ratio.numel() == 0:
        zero = torch.zeros((), dtype=torch.float32)
        return {f"rollout/{k}": zero for k in NAMES}
    diff = log_ratio.abs()  # [M]
    k3 = torch.expm1(log_ratio) - log_ratio  # [M] r − 1 − log r ≥ 0
    outside = diff > math.log(RATIO_BAND[1])  # [M] r < 0.5 or r > 2 (the band is symmetric in log r)
    values = (diff.max(), diff.mean(), k3.mean(), outside.double().mean())
    return {f"rollout/{k}": v.float() for k, v in zip(NAMES, values, strict=True)}


NAMES = ("logprob_abs_diff_max", "logprob_abs_diff_mean", "mismatch_kl", "mismatch_ratio_outside_frac")


def batch_mismatch(batch) -> dict[str, Tensor]:
    """The metrics of a prepared RolloutBatch over its completion tokens, where it holds two independent
    log-probs to compare: the engine's (sampler_logp) and the trainer's own forward (old_logp, not the engine's
    reused ones: sampling_logp). Else none."""
    sampler, trainer = batch.sampler_logp, batch.old_logp
    if sampler is None or trainer is None or batch.sampling_logp is not None:
        return {}
    return mismatch_metrics(sampler, trainer, batch.response_mask)
