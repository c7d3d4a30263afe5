"""What a choice implies for another group is printed at start (rlx/cli/implied.py), and the opt-in
`experiment=` bundles (conf/experiment/) compose and say everything they change."""

from __future__ import annotations

import functools
import logging

import pytest
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from rlx.cli.configs import config_dirs
from rlx.cli.help import describe
from rlx.cli.implied import announce, implied_lines, leaves
from tests.conftest import CONF, compose_config
from tests.e2e.readme import sweep_values

HEADLINE = ["algo=grpo", "reward=triton"]
EXPERIMENTS = sweep_values("experiment", "glob(*)")  # what `-m experiment='glob(*)'` runs


@functools.cache  # each composition once per session: the tests reuse them
def lines(*overrides: str) -> list[str]:
    cfg = compose_config(list(overrides), with_hydra=True)
    choices = {k: v for k, v in cfg.hydra.runtime.choices.items() if not k.startswith("hydra")}
    return implied_lines(cfg, choices, list(overrides), config_dirs()[0])


def test_the_default_run_implies_nothing():
    assert lines() == []


def test_the_headline_command_says_what_it_brought_and_changed():
    said = lines(*HEADLINE)
    assert said[:3] == [
        "reward=triton brings data=kernels, advantage=token_class",
        "data=kernels brings model=tiny_kernels",
        "reward=triton, algo=grpo bring recipe=triton_grpo (drop it with ~recipe)",
    ]
    recipe = OmegaConf.load(CONF / "recipe" / "triton_grpo.yaml")  # every key the recipe sets is named
    named = said[3].removeprefix("recipe=triton_grpo sets ").split(", ")
    assert named == [f"{k}={v}" for k, v in leaves(OmegaConf.to_container(recipe))]
    assert "algo.optimizer.lr=2e-05" in named and "algo.temperature=0.7" in named


def test_override_order_does_not_change_the_run_or_what_is_said():
    assert lines(*HEADLINE) == lines(*reversed(HEADLINE))
    assert compose_config(HEADLINE) == compose_config(list(reversed(HEADLINE)))


def test_the_command_line_wins_and_is_not_reported_as_implied():
    said = lines(*HEADLINE, "advantage=group_norm", "algo.optimizer.lr=1e-4")
    assert said[0] == "reward=triton brings data=kernels"
    assert not any("algo.optimizer.lr" in line for line in said)
    assert "~recipe" not in " ".join(lines("reward=triton", "~recipe"))


def test_a_preset_that_names_its_estimator_keeps_it_and_says_so():
    said = lines("algo=ppo", "reward=triton")
    assert "algo=ppo brings advantage=gae, aggregate=token_mean, kl=k1" in said
    assert "reward=triton brings data=kernels" in said  # token_class is not in effect, so not claimed


def test_peft_lora_says_it_sets_the_learning_rate():
    assert lines("peft=lora") == ["peft=lora sets algo.optimizer.lr=0.001"]


def test_announce_logs_each_line_from_hydras_runtime(caplog):
    cfg = compose_config(HEADLINE, with_hydra=True)
    HydraConfig.instance().set_config(cfg)
    try:
        with caplog.at_level(logging.INFO, logger="rlx"):
            announce(cfg)
    finally:
        HydraConfig.instance().cfg = None
    assert caplog.messages[0] == "implied: reward=triton brings data=kernels, advantage=token_class"


def test_experiments_exist_for_the_smoke_sweep():
    assert len(EXPERIMENTS) >= 2, "conf/experiment/ holds the opt-in bundles"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_is_an_opt_in_global_diff_that_says_what_it_sets(name):
    path = CONF / "experiment" / f"{name}.yaml"
    assert path.read_text(encoding="utf-8").startswith("# @package _global_\n"), path
    assert len(describe(path).split()) >= 5, f"{path}: the header's first sentence says what the bundle is for"
    said = lines(f"experiment={name}")
    body = OmegaConf.to_container(OmegaConf.load(path))
    keys = [f"{k}={v}" for k, v in leaves(body) if k != "defaults"]
    sets = next(line for line in said if line.startswith(f"experiment={name} sets "))
    assert sets.removeprefix(f"experiment={name} sets ").split(", ") == keys
    assert compose_config([]) != compose_config([f"experiment={name}"])  # opt-in: the default has none
