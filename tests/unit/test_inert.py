"""Inert keys: each rule on the real composed config (components built, no model loaded), the warning and
inert.json, and the command-line parsing."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
from hydra.core.hydra_config import HydraConfig

from rlx.checks import build_node
from rlx.inert import Parts, command_line_keys, find_inert, warn_inert
from tests.conftest import compose_config

SINGLE = ["algo.update_epochs=1", "algo.minibatches=1"]  # one optimiser step per batch: the ratio is 1


def parts(cfg) -> Parts:
    return Parts(
        cfg=cfg,
        algo=build_node(cfg, "algo"),
        advantage=build_node(cfg, "advantage"),
        task=build_node(cfg, "data"),
        reward=build_node(cfg, "reward"),
        sampler=build_node(cfg, "curriculum"),
        model=build_node(cfg, "model"),
    )


def inert(cfg_factory, overrides, keys):
    return find_inert(parts(cfg_factory(*overrides)), keys)


def test_epsilon_is_inert_with_one_update_per_batch_and_acts_with_more(cfg_factory):
    found = inert(cfg_factory, ["algo=grpo", *SINGLE], ["algo.epsilon", "algo.epsilon_high", "algo.beta"])
    assert set(found) == {"algo.epsilon", "algo.epsilon_high"}  # β acts (a reference at 0.04)
    assert "exactly 1" in found["algo.epsilon"] and "algo.update_epochs" in found["algo.epsilon"]
    assert inert(cfg_factory, ["algo=grpo", *SINGLE[1:], "algo.update_epochs=2"], ["algo.epsilon"]) == {}
    assert inert(cfg_factory, ["algo=grpo"], ["algo.epsilon"]) == {}  # the preset's 4 minibatch steps
    assert inert(cfg_factory, ["algo=ppo"], ["algo.epsilon"]) == {}  # 2 epochs × 4 minibatches
    assert set(inert(cfg_factory, ["policy_loss=dual_clip", *SINGLE], ["policy_loss.clip_c"])) == {"policy_loss.clip_c"}


def test_epsilon_is_inert_for_a_ratio_free_loss(cfg_factory):
    found = inert(cfg_factory, ["algo=reinforce"], ["algo.epsilon"])
    assert "Reinforce has no importance ratio" in found["algo.epsilon"]


def test_kl_keys_are_inert_at_beta_zero_and_beta_without_an_estimator(cfg_factory):
    keys = ["kl.placement", "algo.beta"]
    found = inert(cfg_factory, ["algo=grpo", "algo.beta=0"], keys)
    assert list(found) == ["kl.placement"] and found["kl.placement"].startswith("algo.beta=0")
    assert inert(cfg_factory, ["algo=grpo", "algo.beta=0.04"], keys) == {}
    found = inert(cfg_factory, ["algo=dr_grpo"], keys)  # kl=none: nothing reads β or the placement
    assert set(found) == {"kl.placement", "algo.beta"} and found["algo.beta"].startswith("kl=none")


def test_curriculum_and_warm_start_keys(cfg_factory):
    assert (
        "unpaced"
        in inert(cfg_factory, ["curriculum=sorted", "curriculum.pace_steps=0"], ["curriculum.pace_start"])[
            "curriculum.pace_start"
        ]
    )
    assert inert(cfg_factory, ["curriculum=sorted"], ["curriculum.pace_start"]) == {}
    assert set(
        inert(
            cfg_factory,
            ["curriculum=learnable_band", "curriculum.explore=1.0"],
            ["curriculum.lo", "curriculum.hi", "curriculum.explore"],
        )
    ) == {"curriculum.lo", "curriculum.hi"}
    assert set(
        inert(
            cfg_factory,
            ["model.warm_start.max_attempts=1"],
            ["model.warm_start.retry_init_std", "model.warm_start.steps"],
        )
    ) == {"model.warm_start.retry_init_std"}
    assert inert(cfg_factory, [], ["reward.timeout_s"])["reward.timeout_s"].startswith("reward.verifier=exact")
    assert inert(cfg_factory, ["reward.verifier=math_verify"], ["reward.timeout_s"]) == {}


def test_task_and_model_declarations():
    """Rules over components the config tree cannot combine today: a task without a plateau loss, a model
    loaded from a directory, a run without a critic, no soft overlong punishment."""
    algo = SimpleNamespace(
        critic=None, shaping=SimpleNamespace(max_length=None), beta=0.0, kl=SimpleNamespace(estimator=None)
    )
    p = Parts(
        cfg=None,
        algo=algo,
        advantage=None,
        reward=None,
        sampler=None,
        task=SimpleNamespace(warm_start_plateau_loss=None),
        model=SimpleNamespace(name_or_path="/m"),
    )
    found = find_inert(
        p,
        [
            "model.warm_start.plateau_check_step",
            "data.teacher_carry_drop",
            "data.warm_start_min_match",
            "algo.critic.value_clip",
            "algo.shaping.overlong_cache_length",
            "data.val_size",
            "algo.beta",
        ],
    )
    assert set(found) == {
        "model.warm_start.plateau_check_step",
        "data.teacher_carry_drop",
        "data.warm_start_min_match",
        "algo.critic.value_clip",
        "algo.shaping.overlong_cache_length",
        "algo.beta",
    }
    assert "no critic" in found["algo.critic.value_clip"]


def test_warn_inert_logs_each_key_and_writes_inert_json(cfg_factory, tmp_path, caplog):
    cfg = cfg_factory("algo=grpo", *SINGLE)
    p = parts(cfg)
    with caplog.at_level(logging.WARNING, logger="rlx.inert"):
        found = warn_inert(
            cfg,
            {"algo.epsilon": "0.1", "algo.group_size": "4"},
            algo=p.algo,
            advantage=p.advantage,
            task=p.task,
            reward=p.reward,
            sampler=p.sampler,
            model=p.model,
        )
    assert list(found) == ["algo.epsilon"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("algo.epsilon=0.1 has no effect in this run: one optimiser step")
    assert json.loads((tmp_path / "run" / "inert.json").read_text()) == found


def test_command_line_keys_leave_out_groups_deletions_and_hydra_keys():
    overrides = [
        "algo=reinforce",
        "kl=k1",
        "algo.epsilon=0.1",
        "+algo.shaping.clip_low=0",
        "~samples_every",
        "hydra.job.chdir=false",
        "seed=3",
    ]
    cfg = compose_config([o for o in overrides if o != "~samples_every" and "clip_low" not in o], with_hydra=True)
    cfg.hydra.overrides.task = overrides
    HydraConfig.instance().set_config(cfg)
    try:
        assert command_line_keys() == {"algo.epsilon": "0.1", "algo.shaping.clip_low": "0", "seed": "3"}
    finally:
        HydraConfig.instance().cfg = None


@pytest.mark.parametrize("overrides", [["algo=reinforce"], ["algo=dr_grpo"], ["algo=dapo"], ["curriculum=uniform"]])
def test_presets_alone_raise_nothing_for_their_own_active_keys(cfg_factory, overrides):
    """Keys every preset really uses are never reported (no false alarms on a plain run)."""
    assert (
        inert(
            cfg_factory,
            overrides,
            [
                "algo.group_size",
                "algo.prompts_per_step",
                "algo.temperature",
                "algo.optimizer.lr",
                "seed",
                "trainer.max_steps",
            ],
        )
        == {}
    )
