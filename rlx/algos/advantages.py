"""Advantage estimators: pure functions on tensors, plus thin config adapters.

Shapes: N = prompts × group_size completions, T = completion tokens, K = prompts in the step.
Every estimator's adapter has the same call, `estimator(batch) -> (advantages [N, T], returns [N, T] | None)`,
so the update loop never asks which estimator it holds; what an estimator needs (a critic, groups of two or
more) it declares in `needs_critic` / `min_group_size`, which the start-up checks read. An estimator with
state (the running-mean baseline) round-trips it through `state_dict` so a resumed run continues exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor


def group_statistics(scores: Tensor, group_index: Tensor, valid: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-group count, mean and population std of `scores` over valid samples, broadcast back to [N].

    Groups are never pooled: each prompt's completions are compared only with each other.
    """
    k = int(group_index.max()) + 1
    w = valid.to(scores.dtype)  # [N] INFRA samples weigh 0
    count = torch.zeros(k, dtype=scores.dtype, device=scores.device).index_add_(0, group_index, w)  # [K]
    total = torch.zeros(k, dtype=scores.dtype, device=scores.device).index_add_(0, group_index, scores * w)  # [K]
    mean = total / count.clamp(min=1)  # [K]
    sq = torch.zeros(k, dtype=scores.dtype, device=scores.device).index_add_(0, group_index, (scores - mean[group_index]) ** 2 * w)
    std = (sq / count.clamp(min=1)).sqrt()  # [K] population std (÷ n, not n − 1)
    return count[group_index], mean[group_index], std[group_index]  # each [N]


def group_norm_advantage(scores: Tensor, group_index: Tensor, valid: Tensor, eps: float) -> Tensor:
    """GRPO (arXiv 2402.03300, §4.1.2): A_i = (r_i − mean(r_group)) / (std(r_group) + eps).

    rlx's choices, pinned by tests: the std is the population std (the seed's example: rewards [1,0,1,0]
    give ±1), eps = `eps` is added to the std (verl uses 1e-6, TRL 1e-4, OpenRLHF 1e-9); an all-equal group
    gives exactly 0; a group with one valid sample gives 0 (TRL's choice; verl returns the raw score);
    INFRA samples (valid = False) get 0 and do not enter their group's statistics.
    """
    _, mean, std = group_statistics(scores, group_index, valid)  # [N] each
    return torch.where(valid, (scores - mean) / (std + eps), torch.zeros_like(scores))  # [N]


def group_mean_advantage(scores: Tensor, group_index: Tensor, valid: Tensor) -> Tensor:
    """Dr. GRPO (arXiv 2503.20783, §3.2): A_i = r_i − mean(r_group), no std division (removes the
    difficulty bias that up-weights nearly-solved and nearly-failed prompts)."""
    _, mean, _ = group_statistics(scores, group_index, valid)  # [N]
    return torch.where(valid, scores - mean, torch.zeros_like(scores))  # [N]


def rloo_advantage(scores: Tensor, group_index: Tensor, valid: Tensor) -> Tensor:
    """RLOO (Ahmadian et al. 2024): A_i = r_i − mean of the other n − 1 valid samples of the group
    = n/(n − 1) · (r_i − mean). A group with fewer than two valid samples gives 0."""
    count, mean, _ = group_statistics(scores, group_index, valid)  # [N]
    scale = count / (count - 1).clamp(min=1)  # [N]
    adv = scale * (scores - mean)  # [N]
    return torch.where(valid & (count > 1), adv, torch.zeros_like(scores))  # [N]


def running_mean_advantage(scores: Tensor, valid: Tensor, baseline: float) -> Tensor:
    """REINFORCE with a baseline (Williams 1992, §4): A_i = r_i − b, with b a running mean of the rewards
    of *earlier* batches. b does not depend on this batch's samples, so E[(r − b)·∇log π] = E[r·∇log π]
    (unbiased) while the variance drops. INFRA samples get 0."""
    return torch.where(valid, scores - baseline, torch.zeros_like(scores))  # [N]


def ema_update(average: float, count: int, batch_mean: float, decay: float) -> tuple[float, float]:
    """Exponential moving average with Adam's bias correction (arXiv 1412.6980, §3):
    m_k = decay·m_{k−1} + (1 − decay)·x_k, m̂_k = m_k / (1 − decay^k), with m_0 = 0 and k = `count` + 1.

    Returns: (m_k, m̂_k). After one batch m̂ equals that batch's mean exactly.
    """
    average = decay * average + (1.0 - decay) * batch_mean
    return average, average / (1.0 - decay ** (count + 1))


def gae(token_rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation (Schulman et al. 2016, arXiv 1506.02438, eq. 16), per token:

        δ_t = r_t + γ·V_{t+1} − V_t,   A_t = Σ_l (γλ)^l δ_{t+l},   returns R_t = A_t + V_t

    The episode ends at each completion's last token (V after it is 0). rlx's choice, pinned by a test:
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
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]  # [N]
        running = (delta + gamma * lam * running) * mask[:, t]  # [N] padding resets the sum
        advantages[:, t] = running
        next_value = values[:, t]
    return advantages, (advantages + values) * mask  # [N, T], [N, T]


def whiten(x: Tensor, mask: Tensor, eps: float = 1e-8) -> Tensor:
    """(x − mean)/(std + eps) over masked entries; population std (÷ n, OpenRLHF's choice; verl's
    masked_whiten uses n − 1). Padding stays 0."""
    mask = mask.to(x.dtype)  # [N, T]
    n = mask.sum().clamp(min=1)  # []
    mean = (x * mask).sum() / n  # []
    std = (((x - mean) ** 2 * mask).sum() / n).sqrt()  # []
    return (x - mean) / (std + eps) * mask  # [N, T]


def broadcast_to_tokens(per_sequence: Tensor, response_mask: Tensor) -> Tensor:
    return per_sequence[:, None] * response_mask  # [N, T]


class Estimator:
    """What every `advantage` option declares; stateless estimators keep these defaults."""

    needs_critic = False
    min_group_size = 1
    reads_token_rewards = True  # False: credits reward components directly (shaping and KL-in-reward unseen)

    def bind(self, tokenizer) -> None:
        """Called once by the RLModule with the policy's tokenizer (estimators that read text use it)."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class GroupNorm(Estimator):
    """advantage=group_norm (GRPO, DAPO)."""

    min_group_size = 2

    def __init__(self, eps: float) -> None:
        self.eps = eps

    def __call__(self, batch) -> tuple[Tensor, None]:
        adv = group_norm_advantage(batch.returns_per_sequence(), batch.group_index, batch.valid, self.eps)
        return broadcast_to_tokens(adv, batch.response_mask), None


class GroupMean(Estimator):
    """advantage=group_mean (Dr. GRPO)."""

    min_group_size = 2

    def __call__(self, batch) -> tuple[Tensor, None]:
        adv = group_mean_advantage(batch.returns_per_sequence(), batch.group_index, batch.valid)
        return broadcast_to_tokens(adv, batch.response_mask), None


class LeaveOneOut(Estimator):
    """advantage=rloo."""

    min_group_size = 2

    def __call__(self, batch) -> tuple[Tensor, None]:
        adv = rloo_advantage(batch.returns_per_sequence(), batch.group_index, batch.valid)
        return broadcast_to_tokens(adv, batch.response_mask), None


class RunningMean(Estimator):
    """advantage=running_mean (REINFORCE with a baseline): works with one rollout per prompt."""

    def __init__(self, decay: float) -> None:
        if not 0 <= decay < 1:
            raise ValueError(f"advantage.decay must be in [0, 1) (got {decay}); 0.9 averages ~10 batches")
        self.decay = decay
        self.average, self.baseline, self.count = 0.0, 0.0, 0

    def __call__(self, batch) -> tuple[Tensor, None]:
        scores = batch.returns_per_sequence()  # [N]
        adv = running_mean_advantage(scores, batch.valid, self.baseline)  # [N] baseline from earlier batches
        if batch.valid.any():
            self.average, self.baseline = ema_update(self.average, self.count, float(scores[batch.valid].mean()),
                                                     self.decay)
            self.count += 1
        return broadcast_to_tokens(adv, batch.response_mask), None

    def state_dict(self) -> dict:
        return {"average": self.average, "baseline": self.baseline, "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.average, self.baseline, self.count = state["average"], state["baseline"], state["count"]


class GAE(Estimator):
    """advantage=gae (PPO): needs the critic's values on the batch (`batch.values`)."""

    needs_critic = True

    def __init__(self, gamma: float, lam: float, whiten: bool) -> None:
        if not (0 <= gamma <= 1 and 0 <= lam <= 1):
            raise ValueError(f"advantage.gamma and advantage.lam must be in [0, 1] (got {gamma}, {lam})")
        self.gamma, self.lam, self.whiten = gamma, lam, whiten

    def __call__(self, batch) -> tuple[Tensor, Tensor]:
        mask = batch.response_mask * batch.valid[:, None]  # [N, T]
        adv, returns = gae(batch.token_rewards, batch.values, mask, self.gamma, self.lam)  # [N, T] each
        # Whitening is per batch (PPO's reference implementations); the value targets keep the raw scale.
        return (whiten(adv, mask) if self.whiten else adv), returns
