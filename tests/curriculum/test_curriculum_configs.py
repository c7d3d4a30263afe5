"""Every curriculum option and data=mixed_arithmetic compose from the real config tree and build; the sweep
file composes to the four curricula."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tests.conftest import CONF, compose_config, options

OPTIONS = options("curriculum")


@pytest.mark.parametrize("option", OPTIONS)
def test_each_curriculum_builds_and_binds_to_the_mixed_task(option):
    cfg = compose_config([f"curriculum={option}", "data=mixed_arithmetic"])
    task = instantiate(cfg.data)
    sampler = instantiate(cfg.curriculum)
    sampler.bind(task.train)
    sampler.begin_step(0)
    assert all(0 <= i < len(task.train) for i in sampler.sample(4))


def test_dynamic_sampling_defaults_are_dapos():
    cfg = OmegaConf.load(CONF / "curriculum" / "dynamic_sampling.yaml")
    assert (cfg.oversample, cfg.max_rounds) == (3.0, 10)


def test_mixed_task_rows_carry_difficulty_and_answers_fit_max_new_tokens():
    cfg = OmegaConf.load(CONF / "data" / "mixed_arithmetic.yaml")
    task = instantiate(cfg)
    assert {r["difficulty"] for r in task.train} == {0, 1, 2}
    assert [sum(r["difficulty"] == d for r in task.val) for d in range(3)] == list(cfg.val_sizes)
    assert not {r["prompt"] for r in task.train} & {r["prompt"] for r in task.val}
    assert max(len(r["answer"]) for r in task.train + task.val) + 1 <= task.max_new_tokens
    taught = {p for p, _ in task.warm_start_examples(2000, seed=0)}
    assert not taught & {r["prompt"] for r in task.val}  # the warm start never sees a held-out prompt
    assert not taught & {r["prompt"] for r in task.train if r["difficulty"] == 2}  # nor a near-impossible one


def test_sweep_file_composes_each_of_the_four_curricula():
    """As `python -m rlx +sweeps=curricula` does (sweeps/ reaches the search path through rlx's plugin)."""
    cfg = compose_config(["+sweeps=curricula", "run_dir=/tmp/x"], with_hydra=True)
    swept = cfg.hydra.sweeper.params.curriculum.split(",")
    assert swept == ["uniform", "sorted", "learnable_band", "dynamic_sampling"]
    for option in swept:
        job = compose_config(["+sweeps=curricula", "run_dir=/tmp/x", f"curriculum={option}"])
        assert job.data._target_ == "rlx.data.mixed_arithmetic.MixedArithmeticTask"
        assert job.curriculum._target_ == OmegaConf.load(CONF / "curriculum" / f"{option}.yaml")._target_
