"""Start-up checks: an incompatible or impossible configuration fails before any model is loaded, with a
message naming the key, the bad value and the fix. The checks read what each component declares about
itself (`min_group_size`, `needs_critic`, `reads_token_rewards`, `uses_old_logp`, a KL's `estimator` and
`placement`), never algorithm names."""

from __future__ import annotations

import math

from hydra.errors import InstantiationException
from hydra.utils import instantiate

from rlx.errors import ConfigError, RlxError
from rlx.rewards.base import Reward, as_reward


def build_node(cfg, key: str, **kwargs):
    """instantiate(cfg[key]) with the component's own complaint surfaced (Hydra wraps it otherwise):
    an rlx error passes through, a constructor's ValueError/TypeError (e.g. an unknown key) becomes a
    ConfigError that names the config group."""
    try:
        return instantiate(cfg[key], _convert_="all", **kwargs)
    except InstantiationException as err:
        cause = err.__cause__
        if isinstance(cause, RlxError):
            raise cause from None
        if isinstance(cause, (ValueError, TypeError)):
            raise ConfigError(f"{key}: {cause}") from None
        raise


def check_algorithm(algo, advantage, has_critic: bool) -> None:
    if algo.group_size < 1 or algo.prompts_per_step < 1:
        raise ConfigError(
            f"algo.group_size and algo.prompts_per_step must be >= 1 (got {algo.group_size}, {algo.prompts_per_step})"
        )
    if algo.group_size < advantage.min_group_size:
        raise ConfigError(
            f"algo={algo.name} needs algo.group_size >= {advantage.min_group_size} (got {algo.group_size}): "
            f"the group-relative advantage {type(advantage).__name__} has no baseline in a group of one. "
            f"Set algo.group_size=8, or use an estimator that works with one rollout per prompt "
            f"(algo=ppo or algo=reinforce)"
        )
    if advantage.needs_critic and not has_critic:
        raise ConfigError(
            f"advantage={type(advantage).__name__} needs a value network, but this run has no "
            "critic (algo.critic=null): use algo=ppo (which adds one) or a group advantage such as "
            "advantage=group_norm"
        )
    if has_critic and not advantage.needs_critic:
        raise ConfigError(
            f"algo.critic is set but advantage={type(advantage).__name__} never reads its values: "
            "the critic would cost a second model's memory for nothing. Set algo.critic=null, or "
            "advantage=gae"
        )
    if not advantage.reads_token_rewards and (algo.uses_reference and algo.kl.in_reward or algo.shaping.active):
        raise ConfigError(
            f"advantage={type(advantage).__name__} credits the reward's components directly, so "
            f"kl.placement=reward (with algo.beta={algo.beta}) or algo.shaping would be silently ignored. "
            "Set kl.placement=loss (the KL then goes in the loss) and turn algo.shaping's options off"
        )
    if algo.update_epochs < 1 or algo.minibatches < 1:
        raise ConfigError(
            f"algo.update_epochs and algo.minibatches must be >= 1 (got {algo.update_epochs}, {algo.minibatches})"
        )
    if not algo.policy_loss.uses_old_logp and algo.updates_per_batch > 1:
        raise ConfigError(
            f"policy_loss={type(algo.policy_loss).__name__} has no importance ratio, so only one update per "
            f"batch is unbiased (got algo.update_epochs={algo.update_epochs}, algo.minibatches={algo.minibatches}). "
            "Set both to 1, or use a ratio-using loss (policy_loss=clip)"
        )
    batch = algo.group_size * algo.prompts_per_step
    if algo.minibatches > batch:
        raise ConfigError(
            f"algo.minibatches={algo.minibatches} exceeds the {batch} completions of a step "
            f"(algo.prompts_per_step × algo.group_size): set algo.minibatches <= {batch}"
        )
    for key in ("micro_batch_size", "micro_batch_tokens", "generation_batch_size"):
        value = getattr(algo, key)
        if value is not None and value < 1:
            raise ConfigError(f"algo.{key} must be >= 1 or null (got {value}); null means the whole batch at once")
    if algo.max_skipped_updates < 1:
        raise ConfigError(f"algo.max_skipped_updates must be >= 1 (got {algo.max_skipped_updates})")
    if algo.beta < 0:
        raise ConfigError(f"algo.beta must be >= 0 (got {algo.beta}); 0 disables the KL term")
    if algo.beta > 0 and algo.kl.estimator is None:
        raise ConfigError(
            f"algo.beta={algo.beta} puts a KL penalty to the reference model, but kl=none loads "
            "none. Set kl=k3 (or k1, k2), or algo.beta=0"
        )
    if not algo.temperature > 0:
        raise ConfigError(f"algo.temperature must be > 0 (got {algo.temperature})")
    norms = [("algo.max_grad_norm", algo.max_grad_norm)]
    if algo.critic is not None:
        norms.append(("algo.critic.max_grad_norm", algo.critic.max_grad_norm))
    for key, norm in norms:
        if not norm > 0:  # a negative bound would flip the gradient's sign; NaN fails too
            raise ConfigError(f"{key} must be > 0 (got {norm}): the gradient's norm is clipped to it; .inf for no clip")


def check_task(task, reward: Reward) -> None:
    as_reward(reward)  # conf/reward's _target_ built an rlx reward: every call below is its own or the default
    task.check_fields(tuple(reward.required_fields))
    task.check_rows(reward.row_problem, drop=reward.invalid_rows == "drop")  # e.g. reward=unit_tests: tests parse?


# torch's complaint -> the optimiser keyword it is about (torch.optim's messages: "Invalid learning rate: -1e-05")
OPTIMIZER_WORDS = {"learning rate": "lr", "beta": "betas", "epsilon": "eps", "weight_decay": "weight_decay"}


def check_optimizers(algo, max_steps: int) -> None:
    """The policy's (and the critic's) optimiser built once on a throwaway parameter, and the policy's LR schedule
    stepped through the run's `max_steps`: a value the optimiser refuses (lr < 0, a beta outside [0, 1), eps < 0,
    a non-finite number) or a schedule whose rate goes negative fails here, before the warm start and the model
    load, in one line naming the key."""
    # deferred: rlx.checks is imported before torch by the CLI's start-up checks
    import warnings

    import torch

    factories = [("algo.optimizer", algo.optimizer)]
    if algo.critic is not None:
        factories.append(("algo.critic.optimizer", algo.critic.optimizer))
    for key, factory in factories:
        settings = dict(getattr(factory, "keywords", {}) or {})
        for name, value in settings.items():
            numbers = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
                raise ConfigError(f"{key}.{name} must be a finite number (got {value!r})")
        try:
            optimizer = factory([torch.nn.Parameter(torch.zeros(1))])
        except (ValueError, TypeError) as err:
            name = next((k for word, k in OPTIMIZER_WORDS.items() if word in str(err).lower()), None)
            which = f"{key}.{name}={settings[name]!r}" if name in settings else key
            target = getattr(getattr(factory, "func", None), "__name__", "the optimiser")
            raise ConfigError(
                f"{which} is refused by {target}: {err}. Learning rates, eps and weight decay are >= 0 and each beta "
                "is in [0, 1)"
            ) from None
        if key != "algo.optimizer":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # stepping a schedule with no optimiser step in between warns
            schedule = algo.lr_schedule(optimizer, total_steps=max(1, max_steps))
            for step in range(max_steps):
                lr = optimizer.param_groups[0]["lr"]
                if not (math.isfinite(lr) and lr >= 0):
                    raise ConfigError(
                        f"algo.lr_schedule makes the learning rate {lr:.3g} at RL step {step} of {max_steps}: a rate "
                        "must stay finite and >= 0 (e.g. algo.lr_schedule.final_fraction in [0, 1])"
                    )
                schedule.step()
