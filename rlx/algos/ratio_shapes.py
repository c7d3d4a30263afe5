"""The ratio shapes the field adopted in 2025–2026 (the `policy_loss` group, beside `losses.py`): each takes the
per-token log-probs of the policy and of the sampling policy and says how the importance ratio ρ = π_θ/π_old
weighs a token's policy gradient once the policy has moved.

- SAPO: a smooth gate in place of the hard clip;
- GMPO: the clipped geometric mean of a sequence's token ratios;
- DPPO: a binary trust-region mask on the probability change (total variation) or on its binary KL;
- TOPR: REINFORCE on positive advantages, a truncated (tapered) IS weight on negative ones.

Same contract as `losses.py`: (logp, old_logp, advantages[, mask]) → PolicyLoss [N, T]; a loss reduces only within
a row, so micro-batching by rows is exact. At ρ = 1 (one update per batch) every shape's gradient is REINFORCE's
−A·∇log π (GMPO's per sequence), so their keys act only from the second update of a batch (rlx.inert says so).
Where peers' implementations disagree, each function names rlx's choice; docs/loss_shapes.md lists them.
Shapes: N sequences, T completion tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlx.algos.losses import PolicyLoss


def sapo_surrogate(logp: Tensor, old_logp: Tensor, advantages: Tensor, tau_pos: float, tau_neg: float) -> PolicyLoss:
    """SAPO (Gao et al. 2025, "Soft Adaptive Policy Optimization", arXiv 2511.20347, §3):

        f_τ(ρ) = σ(τ·(ρ − 1)) · 4/τ,   τ = τ_pos where A > 0, else τ_neg,   L = −f_τ(ρ)·A

    ∂f/∂ρ = 4σ(1 − σ): exactly 1 at ρ = 1 (the clipped surrogate's gradient there), smoothly decaying as ρ leaves
    1 instead of dropping to 0 at 1 ± ε; τ_neg > τ_pos tapers negative-advantage tokens faster (paper 1.0 / 1.05).
    Nothing is hard-clipped, so `clipped_*` are all False (loss/clipfrac is 0). As verl, the log-ratio is clamped
    to ±20 (TRL does not): the gate is flat there, and it keeps exp from overflowing into an inf·0 gradient.
    """
    ratio = torch.exp((logp - old_logp).clamp(-20.0, 20.0))  # [N, T]
    tau = torch.where(advantages > 0, tau_pos, tau_neg).to(logp.dtype)  # [N, T]
    gate = torch.sigmoid(tau * (ratio - 1.0)) * 4.0 / tau  # [N, T]
    never = torch.zeros_like(logp, dtype=torch.bool)  # [N, T]
    return PolicyLoss(-gate * advantages, never, never)


def gmpo_surrogate(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, epsilon: float, epsilon_high: float
) -> PolicyLoss:
    """GMPO (Zhao et al. 2025, "Geometric-Mean Policy Optimization", arXiv 2507.20673, eq. 6): the geometric mean
    of the token ratios, each clipped in log space on the side its advantage pushes,

        log ρ̃_t = sgn(A)·min(sgn(A)·log ρ_t, sgn(A)·clip(log ρ_t, −ε, ε_high))
        L_i = −Ā_i · exp((1/|y_i|) Σ_t log ρ̃_t),   Ā_i = the sequence's mean advantage

    The sequence loss L_i is written at each of its tokens, so seq_mean_token_mean (the gmpo preset) gives
    mean_i L_i, verl's `geo_mean` (which averages over all rows; rlx skips empty ones). The paper's ε = 0.4 is a
    log-space range: the ratio stays in (e^−0.4, e^0.4). A token clipped where A > 0 and log ρ > ε_high (or
    A < 0 and log ρ < −ε) loses its gradient, as in PPO; a token with A = 0 contributes log ρ̃ = 0.
    """
    m = mask.to(logp.dtype)  # [N, T]
    lengths = m.sum(-1).clamp(min=1)  # [N]
    sign = torch.sign(advantages)  # [N, T]
    log_ratio = logp - old_logp  # [N, T]
    kept = sign * torch.minimum(sign * log_ratio, sign * log_ratio.clamp(-epsilon, epsilon_high))  # [N, T]
    seq_ratio = torch.exp((kept * m).sum(-1) / lengths)  # [N]
    seq_adv = (advantages * m).sum(-1) / lengths  # [N]
    loss = (-seq_adv * seq_ratio)[:, None].expand_as(logp)  # [N, T] the sequence's loss at each token
    return PolicyLoss(loss, (advantages < 0) & (log_ratio < -epsilon), (advantages > 0) & (log_ratio > epsilon_high))


DIVERGENCES = ("tv", "kl")


def dppo_surrogate(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    divergence: str,
    delta_low: float,
    delta_high: float,
    ratio_cap: float,
) -> PolicyLoss:
    """DPPO (Qi et al. 2026, "Rethinking the Trust Region in LLM Reinforcement Learning", arXiv 2602.04879;
    verl `dppo_tv` / `dppo_kl`): a token keeps its importance-weighted gradient unless its probability p = π_θ(y_t)
    has left the trust region around p_old = π_old(y_t) in the direction its advantage pushes it:

        L = −sg(min(ρ, C)) · A · log π_θ · M
        tv: M = 0 where A > 0 and p − p_old > δ_high, or A ≤ 0 and p − p_old < −δ_low
        kl: D = p_old log(p_old/p) + (1 − p_old) log((1 − p_old)/(1 − p))   (the binary KL of the token's event)
            M = 0 where A > 0, p > p_old and D > δ_high, or A ≤ 0, p < p_old and D > δ_low

    The mask replaces PPO's ratio clip (a rare token's ratio swings far for a tiny change in probability; a
    divergence does not), and the detached truncated ratio min(ρ, C) (verl's C = clip_ratio_c = 20) replaces dual
    clip. rlx computes the binary KL with xlogy (exact at p_old = 1, +inf at p = 1); verl adds 1e-8 inside its
    logs (the two agree to ~1e-8 away from p = 1). Masked tokens are marked clipped (high where A > 0).
    """
    if divergence not in DIVERGENCES:
        raise ValueError(f"policy_loss.divergence must be one of {DIVERGENCES} (got {divergence!r})")
    ratio = torch.exp(logp - old_logp).detach()  # [N, T]
    p, p_old = torch.exp(logp).detach(), torch.exp(old_logp)  # [N, T]
    up, down = advantages > 0, advantages <= 0  # [N, T]
    if divergence == "tv":
        out_high, out_low = p - p_old > delta_high, p - p_old < -delta_low  # [N, T]
    else:
        q_old, q = 1.0 - p_old, 1.0 - p  # [N, T]
        binary_kl = p_old * (old_logp - logp.detach()) + torch.xlogy(q_old, q_old) - torch.xlogy(q_old, q)  # [N, T]
        out_high, out_low = (p > p_old) & (binary_kl > delta_high), (p < p_old) & (binary_kl > delta_low)
    masked_high, masked_low = up & out_high, down & out_low  # [N, T]
    keep = (~(masked_high | masked_low)).to(logp.dtype)  # [N, T]
    loss = -ratio.clamp(max=ratio_cap) * advantages * logp * keep  # [N, T]
    return PolicyLoss(loss, masked_low, masked_high)


def topr_loss(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, sequence_ratio: bool) -> PolicyLoss:
    """TOPR (Le Roux et al. 2025, "Tapered Off-Policy REINFORCE", arXiv 2503.14286, eq. 9):

        L = −A · log π_θ                        where A ≥ 0  (no importance weight: supervised on what worked)
        L = −sg(clip(ρ, 0, 1)) · A · log π_θ    where A < 0  (a truncated weight: the taper on what failed)

    with ρ the sequence ratio π_θ(y)/π_old(y) = exp(Σ_t log ρ_t) (the paper's, `sequence_ratio`) or each
    token's own ratio (ROLL's). rlx splits on the advantage's sign (the paper splits on the reward's, after its
    baseline; ROLL on the raw score > 0). Negative tokens whose ratio the cap at 1 lowered are marked clipped.
    """
    log_ratio = (logp - old_logp).detach()  # [N, T]
    if sequence_ratio:
        log_ratio = (log_ratio * mask.to(logp.dtype)).sum(-1, keepdim=True).expand_as(logp)  # [N, T]
    weight = torch.where(advantages < 0, torch.exp(log_ratio.clamp(max=0.0)), torch.ones_like(logp))  # [N, T]
    capped = (advantages < 0) & (log_ratio > 0)  # [N, T]
    return PolicyLoss(-weight * advantages * logp, torch.zeros_like(capped), capped)


class SAPO:
    """policy_loss=sapo."""

    uses_old_logp = True
    reads_epsilon = False

    def __init__(self, tau_pos: float, tau_neg: float) -> None:
        if tau_pos <= 0 or tau_neg <= 0:
            raise ValueError(
                f"policy_loss.tau_pos and tau_neg must be > 0 (got {tau_pos}, {tau_neg}); SAPO uses 1.0 and 1.05"
            )
        self.tau_pos, self.tau_neg = tau_pos, tau_neg

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return sapo_surrogate(logp, old_logp, advantages, self.tau_pos, self.tau_neg)


class GMPO:
    """policy_loss=gmpo: algo.epsilon / epsilon_high are log-space bounds (GMPO: 0.4)."""

    uses_old_logp = True
    reads_epsilon = True

    def __init__(self, epsilon: float, epsilon_high: float) -> None:
        if epsilon <= 0 or epsilon_high <= 0:
            raise ValueError(f"algo.epsilon and algo.epsilon_high must be > 0 for gmpo (got {epsilon}, {epsilon_high})")
        self.epsilon, self.epsilon_high = epsilon, epsilon_high

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return gmpo_surrogate(logp, old_logp, advantages, mask, self.epsilon, self.epsilon_high)


class DPPO:
    """policy_loss=dppo_tv|dppo_kl: its own thresholds δ (a divergence, not a ratio clip: algo.epsilon is unread)."""

    uses_old_logp = True
    reads_epsilon = False

    def __init__(self, divergence: str, delta_low: float, delta_high: float, ratio_cap: float) -> None:
        if divergence not in DIVERGENCES:
            raise ValueError(f"policy_loss.divergence must be one of {DIVERGENCES} (got {divergence!r})")
        if delta_low <= 0 or delta_high <= 0 or ratio_cap <= 1:
            raise ValueError(
                f"policy_loss.delta_low/delta_high must be > 0 and policy_loss.ratio_cap > 1 (got {delta_low}, "
                f"{delta_high}, {ratio_cap}); verl uses ratio_cap 20"
            )
        self.divergence, self.delta_low, self.delta_high, self.ratio_cap = divergence, delta_low, delta_high, ratio_cap

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return dppo_surrogate(
            logp, old_logp, advantages, self.divergence, self.delta_low, self.delta_high, self.ratio_cap
        )


class TOPR:
    """policy_loss=topr: `level` sequence (the paper's ratio) or token (ROLL's)."""

    uses_old_logp = True
    reads_epsilon = False

    def __init__(self, level: str) -> None:
        if level not in ("sequence", "token"):
            raise ValueError(f"policy_loss.level must be 'sequence' (the paper's) or 'token' (ROLL's) (got {level!r})")
        self.sequence_ratio = level == "sequence"

    def __call__(self, logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor) -> PolicyLoss:
        return topr_loss(logp, old_logp, advantages, mask, self.sequence_ratio)
