"""Token selection (the `token_select` config group): which tokens of a minibatch carry the policy gradient.

A selection is computed once per minibatch, before it is split into micro-batches, from what the sampling policy
π_old already gave (its per-token entropy, its log-probs) and the advantages: a micro-batch only reads its rows of
it, so micro-batching stays exact (as the aggregation weights in aggregation.py). It returns

    keep [N, T]     multiplies each token's policy loss (1 keep, 0 drop); the aggregation's normaliser is unchanged
                    (the 80/20 paper's and TRL's: dropped tokens still count in the denominator)
    penalty [N, T]  a coefficient c_t on an added c_t·|log ρ_t| that pulls a token back to π_old (KL-Cov)

- `all`: every token (None: nothing to apply);
- `top_entropy`: the 80/20 rule (Wang et al. 2025, "Beyond the 80/20 Rule", arXiv 2506.01939): only the top-ρ
  highest-entropy ("forking") tokens, by TRL's quantile rule (top_entropy_quantile);
- `clip_cov` / `kl_cov`: Cui et al. 2025, "The Entropy Mechanism of RL for Reasoning LMs", arXiv 2505.22617, §4:
  tokens whose (A − mean A)(log π − mean log π) covariance is high drive entropy collapse; Clip-Cov drops the
  gradient of a random few of them, KL-Cov adds a |log ρ| penalty on the top few.

rlx reads π_old's entropy and log-probs, fixed for the minibatch; TRL and verl read the current forward's, per
micro-batch (TRL gathers the entropies across ranks; rlx's quantile is over this rank's rows). At the first update
of a batch π_θ = π_old and the two agree. Shapes: N sequences of the minibatch, T completion tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class TokenSelection(NamedTuple):
    keep: Tensor  # [N, T] float: multiplies the policy loss
    penalty: Tensor  # [N, T] float: coefficient of |log ρ| added to the policy loss


def top_entropy_mask(entropy: Tensor, mask: Tensor, rho: float) -> Tensor:
    """The 80/20 rule's token mask: H_t ≥ the (1 − ρ)-quantile of the minibatch's token entropies, exactly TRL's
    `get_high_entropy_mask(entropies, mask, 1 − top_entropy_quantile)` (torch.quantile, linear interpolation,
    float32). With n distinct entropies it keeps 1 + ⌊ρ·(n − 1)⌋ tokens: ⌈ρ·n⌉ unless frac(ρ·n) < ρ (n = 3,
    ρ = 0.375 keeps 1, not 2); ties at the threshold are all kept.

    Args: entropy, mask: [N, T]. Returns: bool [N, T].
    """
    valid = mask.bool()  # [N, T]
    values = entropy[valid].float()  # [n]
    if values.numel() == 0:
        return torch.zeros_like(valid)
    threshold = torch.quantile(values, 1.0 - rho)  # []
    return (entropy.float() >= threshold) & valid  # [N, T]


def centred_covariance(logp: Tensor, advantages: Tensor, mask: Tensor) -> Tensor:
    """Each token's term of cov(log π, A) over the minibatch's tokens, (A_t − mean A)(log π_t − mean log π)
    (Cui et al. eq. 7's summand; means over masked tokens); −inf off the mask so no selection picks it."""
    m = mask.to(logp.dtype)  # [N, T]
    count = m.sum().clamp(min=1)  # []
    cov = (advantages - (advantages * m).sum() / count) * (logp - (logp * m).sum() / count)  # [N, T]
    return cov.masked_fill(~mask.bool(), float("-inf"))  # [N, T]


def clip_cov_mask(cov: Tensor, mask: Tensor, fraction: float, low: float, high: float) -> Tensor:
    """Clip-Cov: among tokens with low < cov < high, ⌊fraction·n⌋ (at least 1, n = masked tokens) chosen at random
    (torch's global generator, seeded by the run's seed) lose their gradient. verl also leaves out the tokens the
    PPO clip already removed; rlx selects before the update, from π_old (see the module docstring), where no token
    is clipped yet. Returns: bool [N, T] the dropped tokens."""
    candidates = torch.nonzero((cov > low) & (cov < high) & mask.bool())  # [k, 2]
    count = max(int(fraction * int(mask.bool().sum())), 1)
    chosen = candidates[torch.randperm(len(candidates), device=cov.device)[:count]]  # [≤count, 2]
    dropped = torch.zeros_like(mask, dtype=torch.bool)  # [N, T]
    dropped[chosen[:, 0], chosen[:, 1]] = True
    return dropped


def kl_cov_mask(cov: Tensor, mask: Tensor, fraction: float) -> Tensor:
    """KL-Cov: the ⌊fraction·n⌋ (at least 1) tokens of highest covariance (verl's kl_cov topk). Returns bool [N, T]."""
    n = int(mask.bool().sum())
    picked = torch.zeros(cov.numel(), dtype=torch.bool, device=cov.device)  # [N·T]
    if n:
        picked[torch.topk(cov.flatten(), max(int(fraction * n), 1)).indices] = True
    return picked.view_as(cov) & mask.bool()  # [N, T]


class AllTokens:
    """token_select=all."""

    reads_entropy = reads_old_logp = False

    def __call__(self, entropy, old_logp, advantages: Tensor, mask: Tensor) -> TokenSelection | None:
        return None


class TopEntropy:
    """token_select=top_entropy: ρ = `rho` (the paper's 0.2: keep the top 20%)."""

    reads_entropy, reads_old_logp = True, False

    def __init__(self, rho: float) -> None:
        if not 0 < rho <= 1:
            raise ValueError(f"token_select.rho must be in (0, 1] (got {rho}); the 80/20 rule keeps 0.2")
        self.rho = rho

    def __call__(self, entropy: Tensor, old_logp, advantages: Tensor, mask: Tensor) -> TokenSelection:
        keep = top_entropy_mask(entropy, mask, self.rho).to(advantages.dtype)  # [N, T]
        return TokenSelection(keep, torch.zeros_like(keep))


class ClipCov:
    """token_select=clip_cov: `fraction` of the tokens (verl 2e-4), covariance band (`cov_low`, `cov_high`)."""

    reads_entropy, reads_old_logp = False, True

    def __init__(self, fraction: float, cov_low: float, cov_high: float) -> None:
        if not 0 < fraction <= 1 or cov_low >= cov_high:
            raise ValueError(
                f"token_select.fraction must be in (0, 1] and cov_low < cov_high (got {fraction}, {cov_low}, "
                f"{cov_high}); the paper uses 2e-4 and (1, 5)"
            )
        self.fraction, self.cov_low, self.cov_high = fraction, cov_low, cov_high

    def __call__(self, entropy, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> TokenSelection:
        cov = centred_covariance(old_logp, advantages, mask)  # [N, T]
        dropped = clip_cov_mask(cov, mask, self.fraction, self.cov_low, self.cov_high)  # [N, T]
        keep = (~dropped).to(advantages.dtype)  # [N, T]
        return TokenSelection(keep, torch.zeros_like(keep))


class KLCov:
    """token_select=kl_cov: `fraction` of the tokens (verl 2e-4) get `coef`·|log ρ| (verl ppo_kl_coef 1)."""

    reads_entropy, reads_old_logp = False, True

    def __init__(self, fraction: float, coef: float) -> None:
        if not 0 < fraction <= 1 or coef <= 0:
            raise ValueError(f"token_select.fraction must be in (0, 1] and coef > 0 (got {fraction}, {coef})")
        self.fraction, self.coef = fraction, coef

    def __call__(self, entropy, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> TokenSelection:
        picked = kl_cov_mask(centred_covariance(old_logp, advantages, mask), mask, self.fraction)  # [N, T]
        penalty = picked.to(advantages.dtype) * self.coef  # [N, T]
        return TokenSelection(torch.ones_like(penalty), penalty)
