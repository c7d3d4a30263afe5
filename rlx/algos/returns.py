"""Token-level returns and batch whitening: GAE (PPO) and REINFORCE++ (with and without its group baseline).

Shapes: N completions, T completion tokens; masks are 1 on the completion tokens that are trained.
"""

from __future__ import annotations

import torch
from torch import Tensor


def whiten(x: Tensor, mask: Tensor, unbiased: bool, eps: float = 1e-8) -> Tensor:
    """(x − mean) / sqrt(var + eps) over the masked entries of the whole batch; 0 on padding.

    `unbiased` divides the variance by n − 1 (verl's masked_whiten; TRL) instead of n (OpenRLHF); eps is
    inside the square root, as in verl. Fewer than two masked entries: x − mean (no scaling).
    """
    mask = mask.to(x.dtype)  # [N, T]
    n = mask.sum()  # []
    mean = (x * mask).sum() / n.clamp(min=1)  # []
    sq = ((x - mean) ** 2 * mask).sum()  # []
    var = sq / (n - 1 if unbiased else n).clamp(min=1)  # []
    scale = torch.rsqrt(var + eps) if n > 1 else torch.ones_like(var)  # []
    return (x - mean) * scale * mask  # [N, T]


def gae(token_rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation (Schulman et al. 2016, arXiv 1506.02438, eq. 16), per token:

        δ_t = r_t + γ·V_{t+1} − V_t,   A_t = Σ_l (γλ)^l δ_{t+l},   returns R_t = A_t + V_t

    The episode ends at each completion's last token (V after it is 0); t + 1 is the next sampled token (a
    multi-turn episode's observation ids between turns are skipped). rlx's choice, pinned by a test:
    advantages and returns are exactly 0 on padding (verl leaves non-zero values there).

    Args: token_rewards, values, mask: [N, T] (mask 1 on completion tokens).
    Returns: advantages [N, T], returns [N, T].
    """
    mask = mask.to(values.dtype)  # [N, T]
    values = values * mask  # [N, T] V = 0 past the end, so the last token bootstraps from 0
    next_value = torch.zeros_like(values[:, 0])  # [N]
    running = torch.zeros_like(values[:, 0])  # [N]
    advantages = torch.zeros_like(values)  # [N, T]
    for t in reversed(range(values.shape[1])):
        sampled = mask[:, t] > 0  # [N]
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]  # [N]
        # off the mask the sum passes over the column: padding after the end (where it is still 0), or a
        # multi-turn episode's observation ids, whose next sampled token is the next turn's first
        running = torch.where(sampled, delta + gamma * lam * running, running)  # [N]
        advantages[:, t] = running * mask[:, t]
        next_value = torch.where(sampled, values[:, t], next_value)  # [N] V of the next sampled token
    return advantages, (advantages + values) * mask  # [N, T], [N, T]


def discounted_returns(token_rewards: Tensor, mask: Tensor, gamma: float) -> Tensor:
    """G_t = r_t + γ·G_{t'} within each completion, t' its next sampled token (observation ids between a
    multi-turn episode's turns are skipped; the sum starts at the last sampled token).

    Args: token_rewards, mask: [N, T]. Returns: returns [N, T] (0 on padding).
    """
    mask = mask.to(token_rewards.dtype)  # [N, T]
    running = torch.zeros_like(token_rewards[:, 0])  # [N]
    returns = torch.zeros_like(token_rewards)  # [N, T]
    for t in reversed(range(token_rewards.shape[1])):
        # off the mask the sum passes over the column (padding after the end; observation ids between turns)
        running = torch.where(mask[:, t] > 0, token_rewards[:, t] + gamma * running, running)  # [N]
        returns[:, t] = running * mask[:, t]
    return returns  # [N, T]


def reinforce_pp_advantage(token_rewards: Tensor, mask: Tensor, gamma: float, unbiased: bool) -> Tensor:
    """REINFORCE++ (Hu et al. 2025, arXiv 2501.03262, eqs. 8–10; verl `reinforce_plus_plus`):

        A_t = whiten_batch( Σ_{s ≥ t} γ^{s−t} r_s )

    with r_s the per-token reward (the score at the last token, −β·KL per token when kl.placement=reward), and
    the whitening over every trained token of the batch (no critic, no group). Returns: [N, T].
    """
    return whiten(discounted_returns(token_rewards, mask, gamma), mask, unbiased)  # [N, T]


def reinforce_pp_baseline_advantage(
    token_rewards: Tensor, mask: Tensor, group_index: Tensor, valid: Tensor, unbiased: bool
) -> Tensor:
    """REINFORCE++-baseline (arXiv 2501.03262, §3.2; verl `reinforce_plus_plus_baseline`):

        A_i,t = whiten_batch( R_i − mean_group(R) ),   R_i = Σ_t r_i,t

    the group-centred return broadcast to the completion's tokens, then whitened over every trained token of
    the batch (so longer completions weigh more in the statistics, as in verl). rlx's choice: a group with one
    valid sample centres to 0 (verl keeps its raw score). Returns: [N, T].
    """
    scores = token_rewards.sum(-1)  # [N]
    k = int(group_index.max()) + 1
    w = valid.to(scores.dtype)  # [N]
    count = torch.zeros(k, dtype=scores.dtype, device=scores.device).index_add_(0, group_index, w)  # [K]
    total = torch.zeros(k, dtype=scores.dtype, device=scores.device).index_add_(0, group_index, scores * w)  # [K]
    centred = (scores - (total / count.clamp(min=1))[group_index]) * w  # [N]
    return whiten(centred[:, None] * mask.to(scores.dtype), mask, unbiased)  # [N, T]
