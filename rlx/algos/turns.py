"""Turn-level credit for multi-turn episodes: each model turn's tokens get that turn's own advantage.

The default stays episode-level: every estimator of rlx.algos.advantages scores the whole episode (its outcome,
`batch.rewards`) and broadcasts one advantage over all of its sampled tokens. The two estimators here read the
environment's per-turn rewards instead (`batch.turn_rewards`):

- `advantage=turn_return`: the discounted return-to-go G_k = r_k + γ·G_{k+1} (Kevin, arXiv 2507.11948: γ = 0.4
  best; Dr. Kernel, arXiv 2602.05885: γ = 1), so a turn is credited with its own kernel and the later ones it led to;
- `advantage=turn_reward`: the turn's own reward, r_k or its improvement r_k − r_{k−1}, weighted γ^k.

Either signal gets a group-relative baseline per (prompt, turn index): the mean of the samples of the same prompt
that took that turn, or the mean of the *other* ones (leave_one_out: Dr. Kernel's TRLOO), optionally divided by
that cell's std. The bias trap (verl #7244; docs/algorithms.md): when the policy decides when to stop, which
samples reach turn k depends on their earlier actions, so the baseline is action-dependent: a later turn's gradient
is scaled by the chance that another sample of its prompt reached that turn (a cell of one gets 0), a factor the
stop policy sets (computed exactly in tests/algos/test_turns.py). It is exact when every episode takes the same
number of turns (the environment, not the policy, ends it: max_turns).

Shapes: N episodes, T completion tokens, K = the most model turns an episode of the batch took.
"""

from __future__ import annotations

import abc

import torch
from torch import Tensor

from rlx.algos.advantages import BASELINES, Estimator, group_statistics, leave_one_out_baseline, scaled_advantage


def taken_turns(turns: Tensor, k: int) -> Tensor:
    """[N, K] bool: True where turn k < turns_i was taken."""
    return torch.arange(k, device=turns.device)[None, :] < turns[:, None]  # [N, K]


def discounted_returns(turn_rewards: Tensor, turns: Tensor, gamma: float) -> Tensor:
    """G_k = r_k + γ·G_{k+1} = Σ_{j ≥ k} γ^{j−k} r_j over the turns taken (G = 0 beyond them).

    Args: turn_rewards: [N, K]; turns: [N] long; gamma: the discount (0: the immediate reward).
    Returns: [N, K].
    """
    k = turn_rewards.shape[1]
    taken = taken_turns(turns, k)  # [N, K]
    lag = torch.arange(k, device=turns.device)[:, None] - torch.arange(k, device=turns.device)[None, :]  # [K, K] j − k
    discount = torch.where(lag >= 0, gamma ** lag.clamp(min=0).to(turn_rewards.dtype), 0.0)  # [K, K] γ^{j−k}, j ≥ k
    return (turn_rewards * taken) @ discount * taken  # [N, K]


def turn_rewards_signal(turn_rewards: Tensor, turns: Tensor, gamma: float, improvement: bool) -> Tensor:
    """s_k = γ^k·r_k, or with `improvement` γ^k·(r_k − r_{k−1}) with r_{−1} = 0 (0 beyond the turns taken).

    With improvement and γ = 1 the turns' signals sum to the last turn's reward: the outcome, split over the
    turns that earned it. γ < 1 makes an early gain worth more than the same gain later.

    Args: turn_rewards: [N, K]; turns: [N] long. Returns: [N, K].
    """
    k = turn_rewards.shape[1]
    taken = taken_turns(turns, k)  # [N, K]
    rewards = turn_rewards * taken  # [N, K]
    if improvement:
        rewards = rewards - torch.nn.functional.pad(rewards[:, :-1], (1, 0))  # [N, K] r_k − r_{k−1}
    weight = gamma ** torch.arange(k, device=turns.device).to(turn_rewards.dtype)  # [K] γ^k
    return rewards * weight[None, :] * taken  # [N, K]


def per_turn_advantage(
    signal: Tensor, turns: Tensor, group_index: Tensor, valid: Tensor, baseline: str, std_eps: float | None
) -> Tensor:
    """A_{i,k} = (s_{i,k} − b_{i,k}) / (σ_{g,k} + std_eps), or s_{i,k} − b_{i,k} with std_eps None.

    The cell (g, k) holds the valid samples of prompt g that took turn k; b is the cell's mean, or with
    baseline=leave_one_out the mean of the cell's other samples (TRLOO); σ its population std. A cell of one
    sample gets A = 0. Turns not taken and INFRA samples get 0.

    Args: signal: [N, K]; turns: [N] long; group_index: [N]; valid: [N] bool. Returns: [N, K].
    """
    n, k = signal.shape
    live = taken_turns(turns, k) & valid[:, None]  # [N, K]
    cell = group_index[:, None] * k + torch.arange(k, device=signal.device)[None, :]  # [N, K] one id per (g, k)
    flat, cells, alive = signal.reshape(-1), cell.reshape(-1), live.reshape(-1)  # [N*K] each
    _, mean, std = group_statistics(flat, cells, alive, False)  # [N*K] each
    base = leave_one_out_baseline(flat, cells, alive) if baseline == "leave_one_out" else mean  # [N*K]
    spread = std if std_eps is not None else None  # [N*K] or None
    return scaled_advantage(flat, base, spread, alive, std_eps or 0.0).reshape(n, k)  # [N, K]


def turn_token_advantage(per_turn: Tensor, token_turn: Tensor, response_mask: Tensor) -> Tensor:
    """A_{i,t} = A_{i, token_turn[i,t]} on sampled tokens, 0 on observation tokens (token_turn −1) and padding.

    Args: per_turn: [N, K]; token_turn: [N, T] long; response_mask: [N, T]. Returns: [N, T].
    """
    sampled = token_turn >= 0  # [N, T]
    adv = per_turn.gather(1, token_turn.clamp(min=0))  # [N, T]
    return torch.where(sampled, adv, torch.zeros_like(adv)) * response_mask  # [N, T]


def episode_turns(batch) -> tuple[Tensor, Tensor, Tensor]:
    """The batch's (turn_rewards [N, K], token_turn [N, T], turns [N]); a batch of one-turn episodes (no turn
    fields) is one turn rewarded with its outcome, so turn credit there is the episode-level estimator's."""
    if batch.turn_rewards is not None and batch.token_turn is not None and batch.turns is not None:
        return batch.turn_rewards.to(torch.float32), batch.token_turn, batch.turns
    mask = batch.response_mask  # [N, T]
    token_turn = torch.where(mask > 0, 0, -1).to(torch.long)  # [N, T]
    turns = torch.ones(mask.shape[0], dtype=torch.long, device=mask.device)  # [N]
    return batch.rewards[:, None].to(torch.float32), token_turn, turns


class TurnCredit(Estimator):
    """What advantage=turn_return and advantage=turn_reward share: validation, the baseline and the tokens.
    Per-turn rewards are the environment's, as it returns them: reward shaping and a KL penalty in the reward do
    not reach them (the start-up checks refuse both)."""

    min_group_size = 2
    reads_token_rewards = False

    def __init__(self, gamma: float, baseline: str, std_eps: float | None) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"advantage.gamma must be in [0, 1] (got {gamma}); Kevin's best is 0.4, Dr. Kernel's 1")
        if baseline not in BASELINES:
            raise ValueError(
                f"advantage.baseline must be one of {BASELINES} (got {baseline!r}); leave_one_out is Dr. Kernel's TRLOO"
            )
        if std_eps is not None and not std_eps > 0:
            raise ValueError(f"advantage.std_eps must be > 0 or null (got {std_eps}); null: no std division")
        self.gamma, self.baseline, self.std_eps = float(gamma), baseline, std_eps

    @abc.abstractmethod
    def per_turn_signal(self, turn_rewards: Tensor, turns: Tensor) -> Tensor:
        """Each subclass's per-turn quantity [N, K]."""

    def __call__(self, batch) -> tuple[Tensor, None]:
        turn_rewards, token_turn, turns = episode_turns(batch)  # [N, K], [N, T], [N]
        signal = self.per_turn_signal(turn_rewards, turns)  # [N, K]
        per_turn = per_turn_advantage(
            signal, turns, batch.group_index, batch.sample_mask, self.baseline, self.std_eps
        )  # [N, K]
        return turn_token_advantage(per_turn, token_turn, batch.response_mask), None  # [N, T]


class TurnReturn(TurnCredit):
    """advantage=turn_return: each turn credited with its discounted return-to-go G_k = r_k + γ·G_{k+1}."""

    def per_turn_signal(self, turn_rewards: Tensor, turns: Tensor) -> Tensor:
        return discounted_returns(turn_rewards, turns, self.gamma)  # [N, K]


SIGNALS = ("immediate", "improvement")  # advantage.signal: r_k, or r_k − r_{k−1}


class TurnReward(TurnCredit):
    """advantage=turn_reward: each turn credited with its own reward γ^k·r_k, or its improvement
    γ^k·(r_k − r_{k−1}) (`signal`)."""

    def __init__(self, gamma: float, baseline: str, std_eps: float | None, signal: str) -> None:
        super().__init__(gamma, baseline, std_eps)
        if signal not in SIGNALS:
            raise ValueError(
                f"advantage.signal must be one of {SIGNALS} (got {signal!r}); improvement credits r_k − r_(k−1)"
            )
        self.improvement = signal == "improvement"

    def per_turn_signal(self, turn_rewards: Tensor, turns: Tensor) -> Tensor:
        return turn_rewards_signal(turn_rewards, turns, self.gamma, self.improvement)  # [N, K]
