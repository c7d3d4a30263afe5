"""The entropy bonus (the `entropy` config group): L ← L − c · Σ_{i,t} w_{i,t} · keep_{i,t} · H_{i,t}.

H_t = −Σ_v π_θ(v | x, y<t) log π_θ(v | x, y<t) is the current policy's entropy at completion position t (at the
sampling temperature, with its gradient), w the policy term's aggregation weights and keep the token selection's
(the 80/20 rule drops the bonus where it drops the policy loss, as TRL does). Maximising entropy keeps the policy
from collapsing onto one answer early (Williams & Peng 1991; PPO eq. 9; verl/OpenRLHF `entropy_coeff`, TRL
`entropy_coef`).

- `none`: no term, no entropy forward with gradient (the default: the default run is unchanged);
- `bonus`: a constant c;
- `adaptive`: Skywork-OR1's adaptive entropy control (He et al. 2025, arXiv 2505.22312, as TRL's
  `use_adaptive_entropy` implements it): after each optimiser step the coefficient moves by Δ toward keeping the
  measured entropy at a target, clamped to [c_min, c_max], and it is applied only while the entropy is at or
  below the target.

The coefficient is fixed for a whole optimiser step (every micro-batch sees the same one) and the measurement is
the minibatch's token mean over every micro-batch (and rank), so micro-batching changes nothing. Shapes: N
sequences, T completion tokens.
"""

from __future__ import annotations

import math

from torch import Tensor


def entropy_bonus(entropy: Tensor, weights: Tensor, coef: float) -> Tensor:
    """c · Σ_{i,t} w_{i,t} H_{i,t}: the amount subtracted from the loss (verl: `policy_loss − entropy_coeff ·
    agg_loss(entropy, mask, mode)`; the aggregation is the policy term's, so a micro-batch's rows of `weights`
    give its exact share).

    Args: entropy [N, T] (with gradient); weights [N, T] aggregation weights (× the token selection's keep).
    Returns: [] the bonus (with gradient).
    """
    return coef * (entropy * weights).sum()  # []


def adaptive_entropy_coef(coef: float, entropy: float, target: float, delta: float, low: float, high: float) -> float:
    """Skywork-OR1's update (arXiv 2505.22312, "adaptive entropy control"), as TRL implements it (f2cd577):

        c_{k+1} = clamp(c_k + Δ, low, high)  if e_k ≤ target  else  clamp(c_k − Δ, low, high)

    with e_k the entropy just measured (at e_k = target TRL raises c, as here).
    """
    step = delta if entropy <= target else -delta
    return min(max(coef + step, low), high)


def applied_entropy_coef(coef: float, last_entropy: float, target: float) -> float:
    """The coefficient put in the loss: c_k · 1[e ≤ target], e the last measured entropy (Skywork-OR1's
    α_k = c_k · 1[e_k ≤ tgt-ent]; TRL gates on the previous optimiser step's measurement, +∞ before the first,
    so the first step carries no bonus)."""
    return coef if last_entropy <= target else 0.0


class NoEntropy:
    """entropy=none: no bonus. The update does not compute the entropy's gradient."""

    active = False

    def coefficient(self) -> float:
        return 0.0

    def observe(self, entropy: float) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class EntropyBonus(NoEntropy):
    """entropy=bonus: a constant coefficient `coef` (verl's entropy_coeff, TRL's entropy_coef)."""

    active = True

    def __init__(self, coef: float) -> None:
        if not coef >= 0:
            raise ValueError(
                f"entropy.coef must be >= 0 (got {coef}): a negative coefficient rewards collapse. "
                "e.g. entropy.coef=0.001; entropy=none switches the term off"
            )
        self.coef = coef

    def coefficient(self) -> float:
        return self.coef


class AdaptiveEntropy(NoEntropy):
    """entropy=adaptive: starts at `coef`, moves by `delta` per optimiser step toward `target` (nats, a token mean
    over the trained tokens), clamped to [`coef_min`, `coef_max`]. Its state (the coefficient and the last
    measurement) is saved in checkpoints, so a resumed run continues exactly."""

    active = True

    def __init__(self, coef: float, target: float, delta: float, coef_min: float, coef_max: float) -> None:
        if not (0 <= coef_min <= coef <= coef_max and delta >= 0 and target >= 0):
            raise ValueError(
                f"entropy=adaptive needs 0 <= coef_min <= coef <= coef_max, delta >= 0 and target >= 0 (got "
                f"coef={coef}, coef_min={coef_min}, coef_max={coef_max}, delta={delta}, target={target}); TRL's "
                "defaults: coef 0, target 0.2, delta 0.005, coef_min 0, coef_max 1"
            )
        self.target, self.delta, self.coef_min, self.coef_max = target, delta, coef_min, coef_max
        self.coef, self.last_entropy = coef, math.inf

    def coefficient(self) -> float:
        return applied_entropy_coef(self.coef, self.last_entropy, self.target)

    def observe(self, entropy: float) -> None:
        """After an optimiser step: `entropy` is its minibatch's token-mean entropy (every rank's tokens). A
        non-finite one (a skipped update's) changes nothing."""
        if not math.isfinite(entropy):
            return
        self.coef = adaptive_entropy_coef(self.coef, entropy, self.target, self.delta, self.coef_min, self.coef_max)
        self.last_entropy = entropy

    def state_dict(self) -> dict:
        return {"coef": self.coef, "last_entropy": self.last_entropy}

    def load_state_dict(self, state: dict) -> None:
        if state:  # ({} from a checkpoint of a run without this term: the configured start stands)
            self.coef, self.last_entropy = float(state["coef"]), float(state["last_entropy"])
