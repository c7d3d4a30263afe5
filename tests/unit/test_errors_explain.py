"""rlx.errors.explain in-process: which message each kind of failure becomes (no subprocess, no model)."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import OmegaConf

from rlx.errors import ConfigError, did_you_mean, explain


def composition_error(override: str) -> ConfigCompositionException:
    key = override.split("=")[0]
    return ConfigCompositionException(f"Could not override '{key}'.\nTo append to your config use +{override}")


CONFIG = OmegaConf.create(
    {
        "algo": {"_target_": "rlx.algos.spec.Algorithm", "epsilon": 0.2, "beta": 0.04},
        "trainer": {"_target_": "lightning.pytorch.Trainer", "max_steps": 250},
        "seed": 0,
    }
)


def test_did_you_mean_picks_the_close_candidate_or_none():
    assert did_you_mean("epsilonn", ["beta", "epsilon", "epsilon_high"]) == "epsilon"
    assert did_you_mean("zzz", ["beta", "epsilon"]) is None


def test_an_rlx_error_is_its_own_message_even_when_wrapped():
    try:
        try:
            raise ConfigError("algo.beta must be >= 0 (got -1)")
        except ConfigError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as err:
        assert explain(err) == "algo.beta must be >= 0 (got -1)"


def test_a_bug_keeps_its_traceback():
    assert explain(KeyError("x")) is None and explain(ZeroDivisionError()) is None


def test_unknown_key_suggests_the_close_key():
    message = explain(composition_error("algo.epsilonn=0.1"), compose=lambda key: CONFIG)
    assert message == "algo.epsilonn is not a key of algo: did you mean algo.epsilon?"


def test_policy_loss_epsilon_names_algo_epsilon():
    # ε has one spelling (rlx.algos.spec): no did-you-mean, no `+` hint (Clip takes epsilon, from the Algorithm)
    message = explain(composition_error("policy_loss.epsilon_high=0.28"), compose=lambda key: CONFIG)
    assert message == (
        "policy_loss.epsilon_high is not a key: the clip range is set once, by the preset, for every policy loss. "
        "Set algo.epsilon_high instead: algo.epsilon_high=0.28"
    )


def test_plus_is_suggested_only_for_a_real_argument_of_the_target():
    # lightning.pytorch.Trainer takes gradient_clip_val; rlx's trainer config leaves it at Lightning's default
    message = explain(composition_error("trainer.gradient_clip_val=1.0"), compose=lambda key: CONFIG)
    assert message.endswith("add it with +trainer.gradient_clip_val=1.0"), message
    message = explain(composition_error("algo.zzz=1"), compose=lambda key: CONFIG)
    assert "+algo.zzz" not in message and "its keys: beta, epsilon" in message


def test_unknown_top_level_key_suggests_the_group():
    message = explain(composition_error("algoo=grpo"), compose=lambda key: CONFIG)
    assert message.endswith("did you mean algo?")


@pytest.mark.parametrize("name, guess", [("grpoo", "grpo"), ("xyz", None)])
def test_missing_option_lists_the_options(name, guess):
    err = MissingConfigException(
        f"Could not find 'algo/{name}'", missing_cfg_file=f"algo/{name}", options=["dapo", "grpo", "ppo"]
    )
    message = explain(err)
    assert message.startswith(f"algo={name}: no such option.") and message.endswith("Options of algo: dapo, grpo, ppo")
    assert (f"did you mean algo={guess}?" in message) == (guess is not None)


def test_missing_mandatory_value_names_the_key():
    cfg = OmegaConf.create({"data": {"train_file": "???"}})
    try:
        cfg.data.train_file  # noqa: B018 — the access raises
    except Exception as err:  # noqa: BLE001
        assert (
            explain(err)
            == "data.train_file has no value (??? in its config): add data.train_file=<value> to the command line"
        )
