"""Each preset composes the axes its paper names as a diff over conf/algo/_base.yaml; every option of every axis
group works with every preset that can take it; incompatible combinations fail at start with the fix. Presets
and options are globbed from conf/, so adding one needs no edit here."""

import re

import pytest
import yaml

from rlx.algos import aggregation, kl
from rlx.algos.advantages import GAE, GroupMean, GroupNorm, ReinforcePP, RunningMean
from rlx.algos.losses import CISPO, GSPO, Clip, Reinforce
from rlx.checks import build_node, check_algorithm
from rlx.errors import ConfigError
from tests.conftest import CONF, REPO, options

PRESETS = options("algo")


def parts(cfg_factory, *overrides):
    cfg = cfg_factory(*overrides)
    return build_node(cfg, "algo"), build_node(cfg, "advantage")


def check(cfg_factory, *overrides):
    algo, advantage = parts(cfg_factory, *overrides)
    check_algorithm(algo, advantage, has_critic=algo.critic is not None)
    return algo, advantage


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_is_a_diff_over_the_base_with_its_departures_stated(cfg_factory, preset):
    text = (CONF / "algo" / f"{preset}.yaml").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert re.search(r"arXiv \d{4}\.\d{4,5}|Williams 1992", " ".join(header)), f"{preset}: header names no paper"
    assert "Departs from the paper" in " ".join(header), f"{preset}: header states no departures"
    raw, base = yaml.safe_load(text), yaml.safe_load((CONF / "algo" / "_base.yaml").read_text())
    assert raw["defaults"][0] == "_base" and raw["defaults"][-1] == "_self_"
    for key, value in raw["algo"].items():  # a diff: nothing repeated with the base's value
        assert key in base["algo"], f"{preset}: algo.{key} is not a base key"
        assert value != base["algo"][key], f"{preset}: algo.{key}={value} repeats the base"
    algo, _ = check(cfg_factory, f"algo={preset}")
    assert algo.name == preset


def test_presets_compose_the_papers_axes(cfg_factory):
    def func(partial):
        return partial.func

    algo, adv = check(cfg_factory, "algo=grpo")
    assert isinstance(adv, GroupNorm) and type(algo.policy_loss) is Clip
    assert func(algo.aggregate) is aggregation.seq_mean_token_mean and algo.kl.estimator.func is kl.k3
    assert algo.beta == 0.04 and algo.kl.placement == "loss" and algo.uses_reference and algo.critic is None
    assert algo.updates_per_batch > 1  # the clip acts

    algo, adv = check(cfg_factory, "algo=dr_grpo")
    assert isinstance(adv, GroupMean) and func(algo.aggregate) is aggregation.seq_sum_constant
    assert algo.aggregate.keywords == {"constant": 4}  # data.max_new_tokens of the embedded task
    assert algo.beta == 0.0 and algo.kl.estimator is None and not algo.uses_reference

    algo, adv = check(cfg_factory, "algo=dapo")
    assert isinstance(adv, GroupNorm) and func(algo.aggregate) is aggregation.token_mean
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high) == (0.2, 0.28)
    assert algo.beta == 0.0 and algo.kl.estimator is None
    assert (algo.shaping.max_length, algo.shaping.cache_length) == (4, 1) and not algo.shaping.filter_truncated
    assert cfg_factory("algo=dapo").curriculum._target_ == "rlx.curriculum.dynamic.DynamicSampler"
    assert cfg_factory("algo=dapo", "curriculum=uniform").curriculum._target_.endswith("UniformSampler")

    algo, adv = check(cfg_factory, "algo=reinforce")
    assert isinstance(adv, RunningMean) and isinstance(algo.policy_loss, Reinforce)
    assert algo.updates_per_batch == 1 and algo.kl.placement == "reward"

    algo, adv = check(cfg_factory, "algo=ppo")
    assert isinstance(adv, GAE) and algo.critic is not None and algo.group_size == 1
    assert (algo.update_epochs, algo.minibatches) == (2, 4) and algo.critic.value_clip == 0.2
    assert algo.kl.estimator.func is kl.k1 and algo.kl.placement == "reward"

    algo, adv = check(cfg_factory, "algo=gspo")
    assert isinstance(adv, GroupNorm) and isinstance(algo.policy_loss, GSPO)
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high) == (3e-4, 4e-4)
    assert func(algo.aggregate) is aggregation.seq_mean_token_mean and algo.minibatches == 4

    algo, adv = check(cfg_factory, "algo=cispo")
    assert isinstance(algo.policy_loss, CISPO) and func(algo.aggregate) is aggregation.token_mean
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high) == (1.0, 0.2)

    algo, adv = check(cfg_factory, "algo=reinforce_pp")
    assert isinstance(adv, ReinforcePP) and type(algo.policy_loss) is Clip
    assert algo.kl.placement == "reward" and algo.beta == 0.001 and algo.uses_reference


def preset_rows(text: str, heading: str) -> set[str]:
    section = text[text.index(heading) :]
    table = section[section.index("| preset |") :].split("\n\n")[0]
    return {m.group(1) for m in re.finditer(r"^\| `([a-z0-9_]+)` \|", table, re.M)}


def test_readme_table_lists_every_preset_and_only_presets():
    # The loss-shape presets are tabled in docs/loss_shapes.md (with their sources) until the README's table takes
    # their rows (README.md belongs to the docs branch); a preset must be in one of the two, and no row is stale.
    readme = preset_rows((REPO / "README.md").read_text(), "## Algorithms")
    shapes = preset_rows((REPO / "docs" / "loss_shapes.md").read_text(), "## Presets")
    assert readme <= set(PRESETS) and shapes <= set(PRESETS), f"stale rows: {(readme | shapes) - set(PRESETS)}"
    assert readme | shapes == set(PRESETS), f"algorithm tables: missing {set(PRESETS) - readme - shapes}"


@pytest.mark.parametrize("preset", PRESETS)
def test_dual_clip_works_with_every_preset(cfg_factory, preset):
    # `python -m rlx policy_loss=dual_clip` with any preset: the preset's ε are kept, the cap is c = 3
    algo, _ = check(cfg_factory, f"algo={preset}", "policy_loss=dual_clip")
    preset_algo, _ = parts(cfg_factory, f"algo={preset}")
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high, algo.policy_loss.clip_c) == (
        preset_algo.epsilon,
        preset_algo.epsilon_high,
        3.0,
    )


def test_epsilon_is_spelled_once_as_algo_epsilon(cfg_factory):
    # every ε-reading loss gets the preset's algo.epsilon / epsilon_high; its YAML carries no ε of its own
    for loss in options("policy_loss"):
        assert "epsilon" not in cfg_factory(f"policy_loss={loss}").policy_loss
    algo, _ = parts(cfg_factory, "algo=gspo", "policy_loss=gmpo", "algo.epsilon=0.3", "algo.epsilon_high=0.5")
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high) == (0.3, 0.5)
    # `+policy_loss.epsilon=0.1` composes (`policy_loss.epsilon=0.1` does not: tests/unit/test_errors_explain.py)
    with pytest.raises(
        ConfigError, match=r"^policy_loss.epsilon is not a key: .*Set algo.epsilon instead: algo.epsilon=0.1"
    ):
        parts(cfg_factory, "+policy_loss.epsilon=0.1")


def test_every_policy_loss_with_a_one_update_and_a_several_update_preset(cfg_factory):
    # any loss under one update per batch; a ratio-free loss is refused where the preset makes several
    for loss in options("policy_loss"):
        check(cfg_factory, "algo=reinforce", f"policy_loss={loss}")
        algo, _ = parts(cfg_factory, "algo=grpo", f"policy_loss={loss}")
        if algo.policy_loss.uses_old_logp:
            check(cfg_factory, "algo=grpo", f"policy_loss={loss}")
        else:
            with pytest.raises(ConfigError, match=r"has no importance ratio.*Set both to 1, or use a ratio-using loss"):
                check(cfg_factory, "algo=grpo", f"policy_loss={loss}")


def test_every_aggregation_and_kl_option(cfg_factory):
    for aggregate in options("aggregate"):
        algo, _ = check(cfg_factory, "algo=grpo", f"aggregate={aggregate}")
        assert algo.aggregate.func.__name__ == aggregate
    for estimator in options("kl"):
        for preset in ("ppo", "grpo"):  # a preset that places its KL in the reward, and one in the loss
            algo, _ = parts(cfg_factory, f"algo={preset}", f"kl={estimator}")
            if estimator == "none" and algo.beta > 0:
                with pytest.raises(ConfigError, match=rf"algo.beta={algo.beta} .* kl=none .* Set kl=k3"):
                    check(cfg_factory, f"algo={preset}", f"kl={estimator}")
            else:
                check(cfg_factory, f"algo={preset}", f"kl={estimator}")


def group_presets(cfg_factory):
    return [p for p in PRESETS if parts(cfg_factory, f"algo={p}")[1].min_group_size > 1]


def test_group_presets_refuse_a_group_of_one(cfg_factory):
    group = group_presets(cfg_factory)
    assert {"grpo", "dr_grpo", "dapo", "gspo", "cispo"} <= set(group)
    for preset in group:
        with pytest.raises(ConfigError, match=rf"algo={preset} needs algo.group_size >= 2 \(got 1\).*algo=ppo"):
            check(cfg_factory, f"algo={preset}", "algo.group_size=1")


def test_the_other_presets_accept_one_rollout_per_prompt(cfg_factory):
    others = sorted(set(PRESETS) - set(group_presets(cfg_factory)))
    assert {"ppo", "reinforce", "reinforce_pp"} <= set(others)
    for preset in others:
        algo, _ = check(cfg_factory, f"algo={preset}", "algo.group_size=1")
        assert algo.group_size == 1


def test_beta_with_kl_none_names_the_fix(cfg_factory):
    with pytest.raises(
        ConfigError, match=r"algo.beta=0.04 .* kl=none loads none. Set kl=k3 \(or k1, k2\), or algo.beta=0"
    ):
        check(cfg_factory, "algo=dapo", "algo.beta=0.04")
    algo, _ = check(cfg_factory, "algo=dapo", "algo.beta=0.04", "kl=k3")  # the fix works
    assert algo.uses_reference


def test_gae_without_critic_names_the_fix(cfg_factory):
    with pytest.raises(ConfigError, match=r"advantage=GAE needs a value network.*use algo=ppo"):
        check(cfg_factory, "algo=grpo", "advantage=gae")


def test_critic_that_nothing_reads_is_refused(cfg_factory):
    with pytest.raises(
        ConfigError, match=r"algo.critic is set but advantage=GroupNorm .* algo.critic=null, or advantage=gae"
    ):
        check(cfg_factory, "algo=ppo", "advantage=group_norm", "algo.group_size=4")


def test_reinforce_refuses_several_updates(cfg_factory):
    with pytest.raises(ConfigError, match=r"Reinforce has no importance ratio.*algo.update_epochs=2"):
        check(cfg_factory, "algo=reinforce", "algo.update_epochs=2")


def test_bad_schedule_and_micro_batch_keys_name_the_key(cfg_factory):
    with pytest.raises(ConfigError, match=r"algo.minibatches=200 exceeds the 128 completions"):
        check(cfg_factory, "algo=grpo", "algo.minibatches=200")
    with pytest.raises(ConfigError, match=r"algo.micro_batch_size must be >= 1 or null \(got 0\)"):
        check(cfg_factory, "algo=grpo", "algo.micro_batch_size=0")
    with pytest.raises(ConfigError, match=r"algo.max_skipped_updates must be >= 1"):
        check(cfg_factory, "algo=grpo", "algo.max_skipped_updates=0")
    with pytest.raises(ConfigError, match=r"kl.placement must be one of \('loss', 'reward'\) \(got 'both'\)"):
        check(cfg_factory, "algo=grpo", "kl.placement=both")
    with pytest.raises(ConfigError, match=r"advantage.std must be one of \['population', 'unbiased'\]"):
        check(cfg_factory, "algo=grpo", "advantage.std=sample")


def test_every_advantage_with_a_group_and_a_one_update_preset(cfg_factory):
    # the axes are independent: an estimator that needs no critic and credits token rewards works under any
    # critic-free preset
    for advantage in options("advantage"):
        _, adv = parts(cfg_factory, "algo=grpo", f"advantage={advantage}")
        if adv.needs_critic or not adv.reads_token_rewards:
            continue
        for preset in ("grpo", "reinforce"):
            check(cfg_factory, f"algo={preset}", f"advantage={advantage}")


def test_component_credit_refuses_what_it_would_ignore(cfg_factory):
    for advantage in ("token_class", "component_norm"):
        check(cfg_factory, "algo=grpo", f"advantage={advantage}")  # KL in the loss: fine
        with pytest.raises(ConfigError, match=r"credits .* kl.placement=reward .* Set kl.placement=loss"):
            check(cfg_factory, "algo=grpo", f"advantage={advantage}", "kl.placement=reward")
        with pytest.raises(ConfigError, match=r"credits .* algo.shaping"):
            check(cfg_factory, "algo=dapo", f"advantage={advantage}")
