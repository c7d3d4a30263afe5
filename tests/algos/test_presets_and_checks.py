"""Each preset composes the axes the paper names; incompatible combinations fail at start with the fix."""

import pytest

from rlx.algos import aggregation, kl
from rlx.algos.advantages import GAE, GroupMean, GroupNorm, RunningMean
from rlx.algos.losses import ClippedRatio, PolicyGradient
from rlx.checks import build_node, check_algorithm
from rlx.errors import ConfigError

PRESETS = ["ppo", "grpo", "dr_grpo", "dapo", "reinforce"]


def parts(cfg_factory, *overrides):
    cfg = cfg_factory(*overrides)
    return build_node(cfg, "algo"), build_node(cfg, "advantage")


def check(cfg_factory, *overrides):
    algo, advantage = parts(cfg_factory, *overrides)
    check_algorithm(algo, advantage, has_critic=algo.critic is not None)
    return algo, advantage


def func(partial):
    return partial.func


def test_presets_compose_the_papers_axes(cfg_factory):
    algo, adv = check(cfg_factory, "algo=grpo")
    assert isinstance(adv, GroupNorm) and isinstance(algo.policy_loss, ClippedRatio)
    assert func(algo.aggregate) is aggregation.seq_mean_token_mean and func(algo.kl) is kl.k3
    assert algo.beta == 0.04 and algo.reference and not algo.kl_in_reward and algo.critic is None

    algo, adv = check(cfg_factory, "algo=dr_grpo")
    assert isinstance(adv, GroupMean) and func(algo.aggregate) is aggregation.seq_sum_constant
    assert algo.aggregate.keywords == {"constant": 4}  # data.max_new_tokens of the embedded task
    assert algo.beta == 0.0 and not algo.reference

    algo, adv = check(cfg_factory, "algo=dapo")
    assert isinstance(adv, GroupNorm) and func(algo.aggregate) is aggregation.token_mean
    assert (algo.policy_loss.epsilon, algo.policy_loss.epsilon_high) == (0.2, 0.28)
    assert algo.beta == 0.0 and not algo.reference
    assert (algo.shaping.max_length, algo.shaping.cache_length) == (4, 1) and not algo.shaping.filter_truncated
    cfg = cfg_factory("algo=dapo")
    assert cfg.curriculum._target_ == "rlx.curriculum.dynamic.DynamicSampler"  # dynamic sampling
    assert cfg_factory("algo=dapo", "curriculum=uniform").curriculum._target_.endswith("UniformSampler")

    algo, adv = check(cfg_factory, "algo=reinforce")
    assert isinstance(adv, RunningMean) and isinstance(algo.policy_loss, PolicyGradient)
    assert algo.update_epochs == 1 and algo.minibatches == 1

    algo, adv = check(cfg_factory, "algo=ppo")
    assert isinstance(adv, GAE) and algo.critic is not None and algo.group_size == 1
    assert algo.update_epochs * algo.minibatches > 1 and algo.critic.value_clip == 0.2


@pytest.mark.parametrize("preset", ["grpo", "dr_grpo", "dapo"])
def test_group_presets_refuse_a_group_of_one(cfg_factory, preset):
    with pytest.raises(ConfigError, match=rf"algo={preset} needs algo.group_size >= 2 \(got 1\).*algo=ppo or algo=reinforce"):
        check(cfg_factory, f"algo={preset}", "algo.group_size=1")


@pytest.mark.parametrize("preset", ["ppo", "reinforce"])
def test_ppo_and_reinforce_accept_one_rollout_per_prompt(cfg_factory, preset):
    algo, _ = check(cfg_factory, f"algo={preset}", "algo.group_size=1")
    assert algo.group_size == 1


def test_beta_without_reference_names_the_fix(cfg_factory):
    with pytest.raises(ConfigError, match=r"algo.beta=0.04 .* algo.reference=false .* Set algo.reference=true, or algo.beta=0"):
        check(cfg_factory, "algo=dapo", "algo.beta=0.04")
    check(cfg_factory, "algo=dapo", "algo.beta=0.04", "algo.reference=true")  # the fix works


def test_gae_without_critic_names_the_fix(cfg_factory):
    with pytest.raises(ConfigError, match=r"advantage=GAE needs a value network.*use algo=ppo"):
        check(cfg_factory, "algo=grpo", "advantage=gae")


def test_critic_that_nothing_reads_is_refused(cfg_factory):
    with pytest.raises(ConfigError, match=r"algo.critic is set but advantage=GroupNorm .* algo.critic=null, or advantage=gae"):
        check(cfg_factory, "algo=ppo", "advantage=group_norm", "algo.group_size=4")


def test_reinforce_refuses_several_updates(cfg_factory):
    with pytest.raises(ConfigError, match="PolicyGradient has no importance ratio"):
        check(cfg_factory, "algo=reinforce", "algo.update_epochs=2")


def test_every_preset_with_every_advantage_that_fits(cfg_factory):
    # the axes are independent: any group estimator works under any group preset
    for preset in ("grpo", "dr_grpo", "dapo", "reinforce"):
        for advantage in ("group_norm", "group_mean", "rloo", "running_mean"):
            check(cfg_factory, f"algo={preset}", f"advantage={advantage}")


def test_token_class_refuses_what_it_would_ignore(cfg_factory):
    check(cfg_factory, "algo=grpo", "advantage=token_class")  # KL in the loss: fine
    with pytest.raises(ConfigError, match=r"TokenClass credits .* algo.kl_in_reward=false"):
        check(cfg_factory, "algo=grpo", "advantage=token_class", "algo.kl_in_reward=true")
    with pytest.raises(ConfigError, match=r"TokenClass credits .* algo.shaping"):
        check(cfg_factory, "algo=dapo", "advantage=token_class")
