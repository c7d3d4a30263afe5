"""The `algo` node: one preset composes the axes (policy loss, aggregation, KL, reward shaping, critic,
update schedule).

Every field is a key of `conf/algo/<preset>.yaml`; the advantage estimator is its own config group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Algorithm:
    name: str
    group_size: int  # completions per prompt (G)
    prompts_per_step: int  # prompts per RL step; the batch is prompts_per_step × group_size completions
    epsilon: float  # clip range below 1 (and above, unless epsilon_high differs)
    epsilon_high: float  # clip range above 1 (DAPO's clip-higher when > epsilon)
    beta: float  # KL weight (in the loss, or per token in the reward when kl_in_reward)
    reference: bool  # allow a frozen copy of the starting policy; it is loaded only when beta > 0 (false + beta > 0 fails)
    kl: Callable  # per-token estimator (rlx.algos.kl.k1/k2/k3)
    kl_in_reward: bool  # True: −β·KL per token is added to the reward; False: β·KL is added to the loss
    policy_loss: Callable  # (logp, old_logp, advantages) -> (loss [N, T], clipped [N, T])
    aggregate: Callable  # (loss [N, T], mask [N, T]) -> scalar
    update_epochs: int  # μ: passes over each batch
    minibatches: int  # optimiser steps per pass
    max_grad_norm: float
    temperature: float  # sampling temperature (log-probs are computed at the same temperature)
    optimizer: Callable  # partial: params -> torch optimizer
    lr_schedule: Callable  # partial: (optimizer, total_steps) -> LR scheduler
    shaping: Callable  # rlx.algos.shaping.RewardShaping: batch -> (shaped rewards [N], valid [N])
    critic: Any  # rlx.models.critic.Critic (PPO's value network) or None
    generation_batch_size: int | None = None  # (perf, until core's _base.yaml lands) sequences generated at once

    @property
    def uses_reference(self) -> bool:
        return self.reference and self.beta > 0
