"""Per-token KL estimators between the policy π_θ and the reference π_ref (Schulman, "Approximating KL
Divergence", 2020), with log q = log π_ref − log π_θ evaluated on tokens sampled from the policy:

    k1 = −log q,    k2 = ½ (log q)²,    k3 = q − 1 − log q  (≥ 0, unbiased; GRPO eq. 4)

rlx clamps log q to ±20 before the exponential in k3 only, so a far-off token cannot overflow to inf
(verl also clamps the output at 10; TRL clamps nothing). Inside ±20 the gradient is exact.

The `kl` config group picks an estimator and where the penalty goes (`kl.placement`):
- `loss`: + β · aggregate(KL(π_θ ‖ π_ref)) is added to the loss, with the policy loss's aggregation (GRPO);
- `reward`: −β · KL(π_old ‖ π_ref) per token is added to the reward before advantages (PPO / InstructGPT,
  REINFORCE++), with π_old the sampling policy.
`kl=none` has no estimator: no reference model is ever loaded, and β > 0 is refused at start.

`kl.importance_weighted` (kl=k3_is): the estimate is taken on tokens sampled from π_old, not π_θ; after the first
update of a batch E_{π_old}[k] is no longer KL(π_θ ‖ π_ref). Weighting each token by ρ = π_θ/π_old (with its
gradient) makes it unbiased again: E_{π_old}[ρ·k3] = E_{π_θ}[k3] = KL(π_θ ‖ π_ref) (DeepSeek-V3.2, arXiv
2512.02556, §3.1 "unbiased KL estimate"; TRL `use_bias_correction_kl`, which weights by its ratio coef_1).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return logp - ref_logp  # [N, T]


def k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return 0.5 * (ref_logp - logp) ** 2  # [N, T]


def k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    log_q = (ref_logp - logp).clamp(-20.0, 20.0)  # [N, T]
    return torch.exp(log_q) - 1.0 - log_q  # [N, T]


PLACEMENTS = ("loss", "reward")


def importance_weighted(kl: Tensor, logp: Tensor, old_logp: Tensor) -> Tensor:
    """ρ·k with ρ = exp(log π_θ − log π_old), not detached: unbiased for KL(π_θ ‖ π_ref) on tokens drawn from π_old,
    and so is its gradient (∇E_{π_old}[ρ·k] = ∇E_{π_θ}[k]). At π_θ = π_old it is k itself."""
    return torch.exp(logp - old_logp) * kl  # [N, T]


class KL:
    """kl=k1|k2|k3|k3_is: a per-token estimator, its placement, and whether it is importance-weighted."""

    def __init__(
        self, estimator: Callable[[Tensor, Tensor], Tensor], placement: str, importance_weighted: bool
    ) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"kl.placement must be one of {PLACEMENTS} (got {placement!r})")
        self.estimator, self.placement, self.importance_weighted = estimator, placement, importance_weighted

    @property
    def in_reward(self) -> bool:
        return self.placement == "reward"

    def __call__(self, logp: Tensor, ref_logp: Tensor, old_logp: Tensor) -> Tensor:
        kl = self.estimator(logp, ref_logp)  # [N, T]
        return importance_weighted(kl, logp, old_logp) if self.importance_weighted else kl


class NoKL:
    """kl=none: no KL term and no reference model. It takes `placement` like the estimators, so a preset that
    places its KL in the reward can still be run with kl=none; without an estimator the placement is unused."""

    estimator = None
    in_reward = False

    def __init__(self, placement: str) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"kl.placement must be one of {PLACEMENTS} (got {placement!r})")
        self.placement = placement
