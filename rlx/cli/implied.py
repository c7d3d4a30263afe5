"""What one config choice implied for another, said in the run's first lines.

A config group's option may choose other groups' options (`reward=triton` brings the task it scores,
`data=kernels`, and its own credit, `advantage=token_class`; `data=kernels` brings `model=tiny_kernels`; a preset
its axes), a `# @package _global_` option may set keys outside its group (`peft=lora` the policy's learning
rate; an `experiment=` bundle its hyperparameters), and config.yaml's `optional recipe: ${reward}_${algo}`
brings a reward's tested recipe for an algo (`reward=triton algo=grpo`: recipe=triton_grpo). All of these are
YAML, not code; this module reads them back from the chosen files and the composed config and names the ones
that took effect, so no command changes hyperparameters silently:

    implied: reward=triton brings data=kernels, advantage=token_class
    implied: data=kernels brings model=tiny_kernels
    implied: reward=triton, algo=grpo bring recipe=triton_grpo (drop it with ~recipe)
    implied: recipe=triton_grpo sets algo.optimizer.lr=2e-05, algo.temperature=0.7, ...

A choice counts when it is in effect (the composed run has it), was not typed on the command line, and differs
from config.yaml's default; a value counts when the run has the file's value and the command line did not set
it (the command line always wins). The default run implies nothing and prints nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from rlx.cli.configs import config_dirs

log = logging.getLogger("rlx")

OVERRIDE = re.compile(r"^override\s+/(?P<group>[\w/]+)(?:@\S+)?$")
INTERPOLATED = re.compile(r"\$\{(\w+)\}")


def announce(cfg: DictConfig) -> None:
    """Log what this run's choices implied (nothing for the default run); called by `python -m rlx` at start."""
    hydra_cfg = HydraConfig.get()
    choices = {k: v for k, v in hydra_cfg.runtime.choices.items() if not k.startswith("hydra")}
    for line in implied_lines(cfg, choices, list(hydra_cfg.overrides.task), config_dirs()[0]):
        log.info("implied: %s", line)


def implied_lines(cfg: DictConfig, choices: Mapping[str, Any], overrides: Sequence[str], conf: Path) -> list[str]:
    """One line per option that chose another group's option or set keys outside its group, in defaults order.

    cfg: the composed run config; choices: Hydra's runtime choices (group -> option); overrides: the command
    line's overrides (Hydra's `overrides.task`); conf: the directory of config.yaml and the groups."""
    typed = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    defaults = config_defaults(conf / "config.yaml")
    lines = []
    for group, option in choices.items():
        if option is None or not (conf / group / f"{option}.yaml").is_file():
            continue
        default = defaults.get(group)
        if group not in typed and default is not None and INTERPOLATED.search(default):
            # config.yaml chose it from other groups' choices (`recipe: ${reward}_${algo}`)
            by = ", ".join(f"{g}={choices.get(g)}" for g in INTERPOLATED.findall(default))
            lines.append(f"{by} bring {group}={option} (drop it with ~{group})")
        files = option_files(conf, group, str(option))
        brought = [
            f"{g}={v}"
            for g, v in brought_choices(files)
            if g not in typed and choices.get(g) == v and defaults.get(g) != v
        ]
        if brought:
            lines.append(f"{group}={option} brings {', '.join(dict.fromkeys(brought))}")
        changed = [
            f"{key}={value}"
            for key, value in global_values(files, group)
            if key not in typed and in_effect(cfg, key, value)
        ]
        if changed:
            lines.append(f"{group}={option} sets {', '.join(changed)}")
    return lines


def config_defaults(path: Path) -> dict[str, str | None]:
    """config.yaml's defaults list as {group: option} (`optional` dropped; hydra/ overrides and _self_ left out)."""
    out: dict[str, str | None] = {}
    for entry in defaults_of(path):
        if isinstance(entry, dict):
            for key, value in entry.items():
                group = str(key).removeprefix("optional ").strip()
                if not group.startswith(("override", "hydra")):
                    out[group] = None if value is None else str(value)
    return out


def defaults_of(path: Path) -> list:
    """A config file's defaults list as plain Python, interpolations unresolved (`${reward}_${algo}`)."""
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return list(node.get("defaults", [])) if isinstance(node, dict) else []


def option_files(conf: Path, group: str, option: str) -> list[Path]:
    """The option's file and the same-group files its defaults list includes first (`- _base`, `- tiny`)."""
    path = conf / group / f"{option}.yaml"
    files = []
    for entry in defaults_of(path):
        if isinstance(entry, str) and entry != "_self_" and (conf / group / f"{entry}.yaml").is_file():
            files += option_files(conf, group, entry)
    return [*files, path]


def brought_choices(files: Sequence[Path]) -> Iterator[tuple[str, str]]:
    """(group, option) for every `override /group: option` in the files' defaults lists."""
    for path in files:
        for entry in defaults_of(path):
            if isinstance(entry, dict):
                for key, value in entry.items():
                    match = OVERRIDE.match(str(key))
                    if match and value is not None:
                        yield match.group("group"), str(value)


def global_values(files: Sequence[Path], group: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) for every leaf a `# @package _global_` file sets outside its own group's node (and
    outside `hydra.`, which is Hydra's business: a sweep file's mode and params)."""
    for path in files:
        if "@package _global_" not in path.read_text(encoding="utf-8").split("\n", 1)[0]:
            continue
        node = OmegaConf.load(path)
        for key, value in leaves(OmegaConf.to_container(node, resolve=False)):
            if key != "defaults" and not key.startswith((f"{group}.", "hydra.")) and key != group:
                yield key, value


def leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], node


def in_effect(cfg: DictConfig, key: str, value: Any) -> bool:
    """Whether the composed run has the file's value at `key` (the command line may have replaced it)."""
    current = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
    if isinstance(current, (DictConfig, ListConfig)):
        current = OmegaConf.to_container(current, resolve=True)
    return bool(current == value)
