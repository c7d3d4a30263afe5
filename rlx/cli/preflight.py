"""Checks on the composed config that run before anything is built (seconds, not a model load later)."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hydra import compose
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from rlx.checks import build_node, check_algorithm, check_task
from rlx.cli.paths import config_dirs
from rlx.errors import ConfigError


def check_config(cfg: DictConfig) -> None:
    """Values the config leaves unset (`???`), the RL step budget, and a sweep started as a single run."""
    hydra = HydraConfig.get() if HydraConfig.initialized() else None
    choices = dict(hydra.runtime.choices) if hydra is not None else {}
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        groups = sorted({key.split(".")[0] for key in missing})
        chosen = ", ".join(f"{g}={choices[g]}" for g in groups if g in choices) or ", ".join(groups)
        add = " ".join(f"{key}=<value>" for key in missing)
        raise ConfigError(f"{chosen} needs {', '.join(missing)} (no default): add {add}")
    steps = cfg.trainer.max_steps
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ConfigError(
            f"trainer.max_steps is the number of RL steps and must be an integer >= 1 (got {steps!r}): "
            "e.g. trainer.max_steps=250"
        )
    if hydra is not None:
        check_mode(hydra)
        check_value_types(cfg, hydra)


def check_value_types(cfg: DictConfig, hydra) -> None:
    """`algo.beta=abc`: a command-line value of another kind than the config's own value for that key (a number
    or a boolean), caught here rather than as a TypeError deep inside a component."""
    choices = set(hydra.runtime.choices)
    values = [o for o in hydra.overrides.task if "=" in o and not o.startswith("~")]
    keyed = [(o.split("=", 1)[0].lstrip("+"), o) for o in values]
    plain = [(key, o) for key, o in keyed if key not in choices and "/" not in key and not o.startswith("+")]
    if not plain or not GlobalHydra.instance().is_initialized():
        return
    try:  # the config without the value overrides: the values the YAML files give
        base = compose(hydra.job.config_name, overrides=[o for _, o in keyed if (_, o) not in plain])
    except Exception:  # noqa: BLE001 — only a hint; composition errors were reported by Hydra already
        return
    for key, override in plain:
        default = OmegaConf.select(base, key, default=None)
        value = OmegaConf.select(cfg, key, default=None)
        expected = _kind(default)
        if expected is None or value is None or _kind(value) == expected:
            continue
        raise ConfigError(f"{override}: {key} takes {expected} (the config's value is {default!r})")


def _kind(value) -> str | None:
    if isinstance(value, bool):
        return "a boolean (true or false)"
    if isinstance(value, (int, float)):
        return "a number"
    return None


def check_mode(hydra) -> None:
    """Hydra quietly starts a single run when it cannot compose a config as a multirun (its `get_mode` swallows
    the error), so a sweep file would run once with its defaults. Refuse instead."""
    params = OmegaConf.select(hydra, "sweeper.params", default=None)
    if hydra.mode == RunMode.RUN and params:
        sweeps = [o for o in hydra.overrides.task if re.match(r"^\+{0,2}sweeps=", o)]
        what = " ".join(sweeps) or "hydra.sweeper.params"
        raise ConfigError(
            f"{what} defines a sweep over {', '.join(map(str, params))}, but Hydra started a single "
            "run: add -m to run it as a multirun (Hydra then reports why it did not compose as one), "
            "or drop hydra.mode=RUN"
        )


def bundled_task(reward_choice: str | None) -> str | None:
    """The `data` option a reward's YAML brings (`override /data@_global_.data: programs`), if any."""
    if not reward_choice:
        return None
    path = config_dirs()[0] / "reward" / f"{reward_choice}.yaml"
    if not path.is_file():
        return None
    node = OmegaConf.load(path)
    for item in (node.get("defaults") if isinstance(node, DictConfig) else None) or []:
        for key, value in item.items() if isinstance(item, (DictConfig, dict)) else []:
            if re.match(r"^override /data(@|$)", str(key)):
                return str(value)
    return None


@contextmanager
def bundled_task_hint():
    """Around the reward/task field check: when the rows lack what the reward reads and the run replaced the
    reward's bundled task, name that task as the fix (`reward=unit_tests data=arithmetic` -> data=programs)."""
    try:
        yield
    except ConfigError as err:
        choices = HydraConfig.get().runtime.choices if HydraConfig.initialized() else {}
        reward, data = choices.get("reward"), choices.get("data")
        bundled = bundled_task(reward)
        if bundled is None or bundled == data:
            raise
        raise ConfigError(
            f"{err}. reward={reward} scores its own task data={bundled}, but this run chose "
            f"data={data}: drop data={data} (or set data={bundled}), or use a task whose rows carry "
            "the reward's fields"
        ) from None


@dataclass
class Inputs:
    """The components built and checked before Lightning and transformers are imported."""

    task: Any
    reward: Any
    algo: Any
    advantage: Any


def build_inputs(cfg: DictConfig) -> Inputs:
    """The data (its files exist, parse and have rows), the reward and its pairing with the data's rows, then the
    algorithm and its group size: every check that needs no model, in seconds (the data first: it imports no
    torch; the algorithm's components do). None of these draws from the global RNGs, so building them before
    rlx.train seeds those gives the same run (the default run's metrics.csv is unchanged to the last digit)."""
    task = build_node(cfg, "data")
    reward = build_node(cfg, "reward")
    env = OmegaConf.select(cfg, "env")
    if env is None or env.get("_partial_", False):  # the env scores with the run's reward (env=single): its rows
        with bundled_task_hint():  # rows without the reward's fields: name the reward's own task as the fix
            check_task(task, reward)
    reward.bind(task)  # a reward whose defaults depend on the task (reward=math's strict=null)
    algo = build_node(cfg, "algo")
    advantage = build_node(cfg, "advantage")
    check_algorithm(algo, advantage, has_critic=algo.critic is not None)
    return Inputs(task, reward, algo, advantage)
