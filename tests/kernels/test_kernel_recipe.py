"""`python -m rlx algo=grpo reward=triton` brings its tested CPU recipe (conf/recipe/triton_grpo.yaml, chosen
by config.yaml's `recipe: ${reward}_${algo}`), whatever the order of the overrides, and the command line
still has the last word."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

RECIPE = {
    "algo.temperature",
    "algo.prompts_per_step",
    "algo.group_size",
    "trainer.max_steps",
    "trainer.val_check_interval",
    "val_samples",
}


def picked(cfg) -> dict:
    return {key: OmegaConf.select(cfg, key) for key in RECIPE}


def test_order_of_overrides_does_not_matter(cfg_factory):
    a = OmegaConf.to_container(cfg_factory("algo=grpo", "reward=triton"))
    b = OmegaConf.to_container(cfg_factory("reward=triton", "algo=grpo"))
    assert a == b and a == OmegaConf.to_container(cfg_factory("reward=triton"))  # grpo is the default algo


def test_the_recipe_overrides_the_algo_preset(cfg_factory):
    plain, recipe = cfg_factory("algo=grpo"), cfg_factory("algo=grpo", "reward=triton")
    assert picked(recipe) != picked(plain)
    assert recipe.algo.temperature < plain.algo.temperature  # the preset's 1.0 derails the tiny model
    assert recipe.val_samples == 8 and plain.val_samples == 0  # a recipe also sets config.yaml's own keys
    assert recipe.algo.name == "grpo" and recipe.data._target_ == "rlx.data.kernels.task.KernelTask"


@pytest.mark.parametrize(
    "override", ["algo.temperature=0.9", "trainer.max_steps=3", "algo.group_size=6", "model.warm_start.steps=5"]
)
def test_command_line_overrides_win(cfg_factory, override):
    key, value = override.split("=")
    for order in ((override, "reward=triton"), ("reward=triton", override)):
        assert str(OmegaConf.select(cfg_factory(*order), key)) == value


def test_no_recipe_for_other_pairs_and_it_can_be_dropped(cfg_factory):
    grpo = picked(cfg_factory("algo=grpo"))
    assert picked(cfg_factory("reward=triton", "~recipe")) == grpo  # the preset's own values
    dapo = cfg_factory("algo=dapo", "reward=triton")  # no triton_dapo recipe: DAPO's values stand
    assert picked(dapo) == picked(cfg_factory("algo=dapo"))
    assert picked(cfg_factory("reward=math")) == grpo


def test_gpu_recipe_scales_the_cpu_one_up(cfg_factory):
    from rlx.checks import build_node

    cpu, gpu = cfg_factory("reward=triton"), cfg_factory("reward=triton", "recipe=triton_grpo_gpu")
    assert gpu.algo.temperature == cpu.algo.temperature  # a diff over the CPU recipe
    assert gpu.algo.prompts_per_step * gpu.algo.group_size > cpu.algo.prompts_per_step * cpu.algo.group_size
    assert gpu.trainer.max_steps > cpu.trainer.max_steps and gpu.reward.workers > cpu.reward.workers
    assert gpu.model.warm_start.steps > cpu.model.warm_start.steps
    task = build_node(gpu, "data")  # KernelBench-sized rows: blocks up to 4096, masked where a row overhangs
    assert {r["plan"] for r in task.train} == {
        "B=1024, mask c<n",
        "B=1024, no mask",
        "B=4096, mask c<n",
        "B=512, no mask",
        "B=4096, no mask",
    }


@pytest.mark.parametrize(
    ("algo", "expected"),
    [
        ("grpo", "token_class"),  # names no estimator: the reward's
        ("ppo", "gae"),
        ("dr_grpo", "group_mean"),
        ("dapo", "group_norm"),
        ("gspo", "group_norm"),
        ("cispo", "group_norm"),
        ("reinforce", "running_mean"),
        ("reinforce_pp", "reinforce_pp"),
    ],
)
def test_reward_triton_brings_token_class_credit_unless_the_preset_names_its_estimator(cfg_factory, algo, expected):
    choices = {
        "token_class": "rlx.algos.token_class.TokenClass",
        "gae": "rlx.algos.advantages.GAE",
        "group_mean": "rlx.algos.advantages.GroupMean",
        "group_norm": "rlx.algos.advantages.GroupNorm",
        "running_mean": "rlx.algos.advantages.RunningMean",
        "reinforce_pp": "rlx.algos.advantages.ReinforcePP",
    }
    assert cfg_factory(f"algo={algo}", "reward=triton").advantage._target_ == choices[expected]
    if algo == "grpo":
        assert cfg_factory("algo=grpo").advantage._target_ == choices["group_norm"]  # reward=math: GRPO's own
        for order in (("advantage=group_norm", "reward=triton"), ("reward=triton", "advantage=group_norm")):
            assert cfg_factory(*order).advantage._target_ == choices["group_norm"]  # the command line wins
