"""The `algo` node: one preset composes the axes (policy loss, aggregation, KL — each its own config group —
reward shaping, critic, update schedule).

Every field is a key of `conf/algo/<preset>.yaml` (`conf/algo/_base.yaml` holds the shared ones); the
advantage estimator, policy loss, aggregation, KL and token selection are the top-level groups `advantage`,
`policy_loss`, `aggregate`, `kl` and `token_select`, which each preset picks in its defaults list and the command
line can swap.

ε has one spelling, `algo.epsilon` / `algo.epsilon_high`: the `policy_loss` node is a factory (`_partial_: true`)
that the Algorithm completes with them when the loss reads a clip range (`reads_epsilon`), so a sweep over
algo.epsilon reaches whichever loss is chosen; `policy_loss.epsilon` is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rlx.algos.correction import NoCorrection
from rlx.algos.entropy import NoEntropy
from rlx.errors import ConfigError, moved_key


@dataclass
class Algorithm:
    name: str
    group_size: int  # completions per prompt (G)
    prompts_per_step: int  # prompts per RL step; the batch is prompts_per_step × group_size completions
    epsilon: float  # clip range below 1 (and above, unless epsilon_high differs); given to the policy loss
    epsilon_high: float  # clip range above 1 (DAPO's clip-higher when > epsilon)
    beta: float  # KL weight (in the loss, or per token in the reward: kl.placement)
    kl: Any  # rlx.algos.kl.KL (estimator + placement) or NoKL (the `kl` group)
    # the `policy_loss` group's factory (functools.partial), built in __post_init__ into the loss:
    # (logp, old_logp, advantages, mask) -> PolicyLoss
    policy_loss: Any
    aggregate: Callable  # mask [N, T] -> aggregation weights [N, T] (the `aggregate` group)
    token_select: Any  # (entropy, old_logp, advantages, mask) -> TokenSelection | None (the `token_select` group)
    update_epochs: int  # μ: passes over each batch
    minibatches: int  # optimiser steps per pass
    micro_batch_size: int | None  # sequences per forward/backward (null: the whole minibatch)
    micro_batch_tokens: int | None  # token budget per micro-batch, grouping sequences by length (null: off)
    generation_batch_size: int | None  # sequences generated at once (read by the rollout; null: all)
    max_skipped_updates: int  # non-finite updates in a row before the run stops
    max_grad_norm: float
    temperature: float  # sampling temperature (log-probs are computed at the same temperature)
    optimizer: Callable  # partial: params -> torch optimizer
    lr_schedule: Callable  # partial: (optimizer, total_steps) -> LR scheduler
    shaping: Callable  # rlx.algos.shaping.RewardShaping: batch -> (shaped rewards [N], sample mask [N])
    critic: Any  # rlx.models.critic.Critic (PPO's value network) or None
    ref_sync_steps: int | None = None  # refresh the reference toward the policy every N RL steps (null: frozen)
    ref_sync_alpha: float = 1.0  # θ_ref ← α·θ + (1 − α)·θ_ref at each refresh (1: TR-DPO's hard sync)
    # (logp, old_logp, sampler_logp, advantages, mask) -> weight [N, T] on the policy loss (the
    # `rollout_correction` group; rlx.algos.correction): none unless a preset or the command line picks one
    rollout_correction: Callable = field(default_factory=NoCorrection)
    # the entropy bonus (the `entropy` group; rlx.algos.entropy): none, a constant or Skywork-OR1's adaptive one
    entropy: Any = field(default_factory=NoEntropy)
    # the training forwards run each micro-batch's real tokens packed, without padding, wherever that is exact
    # (rlx.forward.packing); false: the padded rectangle
    pack_sequences: bool = True

    def __post_init__(self) -> None:
        self.policy_loss = build_policy_loss(self.policy_loss, self.epsilon, self.epsilon_high)
        if self.ref_sync_steps is not None and self.ref_sync_steps < 1 or not 0 < self.ref_sync_alpha <= 1:
            raise ValueError(
                f"algo.ref_sync_steps must be null or >= 1 and algo.ref_sync_alpha in (0, 1] (got "
                f"{self.ref_sync_steps}, {self.ref_sync_alpha}); TRL syncs every 512 steps with alpha 0.6"
            )

    @property
    def uses_reference(self) -> bool:
        """A frozen reference is loaded and used: a KL estimator is chosen and β > 0."""
        return self.kl.estimator is not None and self.beta > 0

    @property
    def updates_per_batch(self) -> int:
        return self.update_epochs * self.minibatches


def build_policy_loss(factory: partial[Any], epsilon: float, epsilon_high: float) -> Callable:
    """The loss from its `policy_loss` factory (conf/policy_loss/<name>.yaml, `_partial_: true`): a loss that
    reads a clip range (`reads_epsilon`) gets algo.epsilon / algo.epsilon_high, the only place they are set."""
    for key in ("epsilon", "epsilon_high"):
        if key in factory.keywords:  # `+policy_loss.epsilon=0.1` composes, then would be silently overridden
            raise ConfigError(moved_key(f"policy_loss.{key}", factory.keywords[key]))
    loss_class: Any = factory.func  # each declares `reads_epsilon`
    if loss_class.reads_epsilon:
        return factory(epsilon=epsilon, epsilon_high=epsilon_high)
    return factory()
