"""Building the run's environment from `conf/env/<name>.yaml` (the `env` group is the registry: `_target_` names
the class). A choice marked `_partial_: true` is the environment of the run's reward (env=single): it gets the
reward built from conf/reward as `reward=`; any other builds its own from its own keys (a nested reward config).

The turn loop's own key, `max_context_tokens`, is read here and not passed to the class: the episode's context cap
(prompt, every turn and observation, and the next turn's max_new_tokens), null for the model's context."""

from __future__ import annotations

import functools

from omegaconf import DictConfig, OmegaConf, open_dict

from rlx.checks import build_node
from rlx.envs.protocol import Environment, EpisodeDriver
from rlx.errors import ConfigError


def build_env(cfg: DictConfig, reward, rollout) -> tuple[Environment | EpisodeDriver, int | None]:
    """The environment `cfg.env` describes and its `max_context_tokens` (None: the model's context), checked
    against the rollout engine `rollout` (conf/rollout) that will run its turns."""
    node = cfg.env.copy()
    with open_dict(node):
        max_context = node.pop("max_context_tokens", None)
    if max_context is not None and (
        isinstance(max_context, bool) or not isinstance(max_context, int) or max_context < 1
    ):
        raise ConfigError(
            f"env.max_context_tokens={max_context!r} must be a positive token count, or null for the model's context"
        )
    built = build_node(OmegaConf.create({"env": node}), "env")
    env = built(reward=reward) if isinstance(built, functools.partial) else built
    if not isinstance(env, (Environment, EpisodeDriver)):
        raise ConfigError(
            f"env._target_ builds {type(env).__module__}.{type(env).__qualname__}, which is not an environment: give "
            "it required_fields, max_turns, reset(rows), step(states, completions) and close() (rlx.envs.protocol, "
            "docs/envs.md)"
        )
    turns = getattr(env, "max_turns", None)
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ConfigError(f"env.max_turns={turns!r} must be a whole number of model turns >= 1 (e.g. env.max_turns=2)")
    if env.max_turns > 1 and rollout.max_staleness > 0:
        raise ConfigError(
            f"rollout.max_staleness={rollout.max_staleness} samples ahead in another process one turn per episode; "
            f"env.max_turns={env.max_turns} episodes need their later turns too. Set rollout.max_staleness=0 "
            "(the synchronous loop) for a multi-turn env"
        )
    return env, max_context
