"""Compose the real config and instantiate every option of every group (lightning-hydra-template style)."""

from __future__ import annotations

import functools
import importlib.util
from typing import get_type_hints

import pytest
from hydra.utils import get_object, instantiate

from tests.conftest import CONF

# every config group; `recipe` and `experiment` hold @package _global_ diffs, not objects:
# tests/kernels/test_kernel_recipe.py and tests/config/test_experiments.py compose those
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("hydra", "recipe", "experiment"))
# Options that need a path the user supplies; the test supplies a placeholder.
REQUIRED = {
    ("model", "hf"): ["model.name_or_path=/nonexistent"],
    ("data", "jsonl"): ["data.train_file=/nonexistent.jsonl", "data.val_file=/nonexistent.jsonl"],
    ("data", "hf_dataset"): ["data.path=/nonexistent"],
    ("data", "humaneval"): ["data.train_file=/nonexistent.jsonl.gz", "reward=unit_tests"],
    ("data", "multi_sum"): ["reward.strict=false"],  # answers after a scratchpad: the last number is scored
    ("data", "kernelbench"): [  # problem files of the tests' own, as published (no shrink: no child process)
        f"data.path={CONF.parent / 'tests' / 'kernels' / 'kernelbench' / 'level1'}",
        "data.val_size=1",
        "data.cpu_max_elements=null",
        "reward=triton",
    ],
    # the environment libraries' choices (docs/envs_libraries.md; tests/envs/ builds the env ones via build_env)
    ("data", "reasoning_gym"): [
        "reward=reasoning_gym",
        "data.name=leg_counting",
        "data.train_size=2",
        "data.val_size=2",
    ],
    ("reward", "reasoning_gym"): ["data.name=leg_counting", "data.train_size=2", "data.val_size=2"],
    ("env", "reasoning_gym"): ["reward=reasoning_gym", "data.name=leg_counting"],
    ("env", "skyrl_gym"): ["env.id=gsm8k_multi_turn"],
    ("env", "openenv"): ["env.environment=tests.envs.fixtures_openenv:GuessEnvironment"],
}
# Building these objects reads files; composing and resolving them is what this test checks.
COMPOSE_ONLY = {
    ("data", "jsonl"),
    ("data", "hf_dataset"),
    ("data", "humaneval"),
    ("env", "skyrl_gym"),
    ("env", "openenv"),
}
# env=verifiers and its rows (data=verifiers, read from env's keys) play a verifiers taskset module; building them
# needs the [verifiers] extra, and tests/envs/test_verifiers_tokens.py builds both from the real config.
REQUIRED[("env", "verifiers")] = ["env.taskset=vf_arith"]
REQUIRED[("data", "verifiers")] = ["env=verifiers", "env.taskset=vf_arith"]
COMPOSE_ONLY |= {("env", "verifiers"), ("data", "verifiers")}
# Building rollout=vllm needs vLLM (its own venv: the CI job tests/rollout/test_vllm_engine.py builds it there);
# without it, building refuses in one line naming the extra (tests/rollout/test_vllm_engine.py tests that too).
if importlib.util.find_spec("vllm") is None:
    COMPOSE_ONLY.add(("rollout", "vllm"))
# The environment libraries' options build only where their extra is installed (CI installs them: .ci/run).
for module, options_of_extra in (("reasoning_gym", [("data", "reasoning_gym"), ("reward", "reasoning_gym")]),):
    if importlib.util.find_spec(module) is None:
        COMPOSE_ONLY.update(options_of_extra)


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))  # _base: not an option


CASES = [(g, o) for g in GROUPS for o in options(g)]


def test_every_group_has_options():
    for group in GROUPS:
        assert options(group), f"conf/{group}/ has no options"


@pytest.mark.parametrize(("group", "option"), CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_option_composes_and_instantiates(cfg_factory, group, option):
    cfg = cfg_factory(f"{group}={option}", *REQUIRED.get((group, option), []))
    node = cfg[group]
    assert "_target_" in node, f"conf/{group}/{option}.yaml has no _target_"
    if (group, option) in COMPOSE_ONLY:
        from omegaconf import OmegaConf

        OmegaConf.to_container(node, resolve=True)
        return
    obj = instantiate(node, _convert_="all")
    target = get_object(node._target_)
    if "_partial_" in node and node._partial_:  # a factory the code calls later with its own arguments
        assert isinstance(obj, functools.partial) and obj.func is target
    elif isinstance(target, type):
        assert isinstance(obj, target)
    else:  # a builder function: what it returns is what it declares
        assert isinstance(obj, get_type_hints(target)["return"])


def test_misspelt_key_fails_at_start(cfg_factory):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        cfg_factory("algo.epsilonn=0.1")
    with pytest.raises(ConfigCompositionException):  # ε is spelled algo.epsilon only (rlx.algos.spec)
        cfg_factory("policy_loss.epsilon=0.1")
