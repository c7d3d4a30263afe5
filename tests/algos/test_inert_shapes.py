"""The new keys in the inert-key checks: each says so at start exactly when it cannot act."""

from tests.unit.test_inert import SINGLE, inert


def test_shape_keys_are_inert_at_ratio_one_and_act_off_policy(cfg_factory):
    for preset, key in (
        ("sapo", "policy_loss.tau_neg"),
        ("dppo", "policy_loss.delta_high"),
        ("topr", "policy_loss.level"),
    ):
        assert key in inert(cfg_factory, [f"algo={preset}", *SINGLE], [key]), preset
        assert inert(cfg_factory, [f"algo={preset}"], [key]) == {}, preset  # 4 minibatch steps: ρ moves
    assert "algo.epsilon" in inert(cfg_factory, ["algo=gmpo", *SINGLE], ["algo.epsilon"])
    assert inert(cfg_factory, ["algo=gmpo"], ["algo.epsilon"]) == {}  # GMPO reads ε (log-space)


def test_epsilon_is_inert_for_shapes_that_do_not_read_it(cfg_factory):
    for preset in ("sapo", "dppo", "topr"):
        found = inert(cfg_factory, [f"algo={preset}"], ["algo.epsilon", "algo.epsilon_high"])
        assert (
            set(found) == {"algo.epsilon", "algo.epsilon_high"}
            and "does not read algo.epsilon" in found["algo.epsilon"]
        )
    assert inert(cfg_factory, ["algo=clip_cov"], ["algo.epsilon"]) == {}


def test_importance_weighted_kl_is_inert_where_the_weight_is_one(cfg_factory):
    key = ["kl.importance_weighted"]
    assert inert(cfg_factory, ["algo=grpo", "kl=k3_is"], key) == {}
    assert "weight is 1" in inert(cfg_factory, ["algo=grpo", "kl=k3_is", *SINGLE], key)[key[0]]
    assert "placement=reward" in inert(cfg_factory, ["algo=grpo", "kl=k3_is", "kl.placement=reward"], key)[key[0]]
    assert "algo.beta=0" in inert(cfg_factory, ["algo=dapo", "kl=k3_is"], key)[key[0]]


def test_selection_keys(cfg_factory):
    # the embedded default's minibatch has at most 16·8·4/4 = 128 tokens: fraction 2e-4 always takes its floor of 1
    found = inert(cfg_factory, ["algo=clip_cov"], ["token_select.fraction"])
    assert "at most 128 completion tokens" in found["token_select.fraction"]
    assert inert(cfg_factory, ["algo=clip_cov", "token_select.fraction=0.05"], ["token_select.fraction"]) == {}
    assert "token_select.coef" in inert(cfg_factory, ["algo=kl_cov", *SINGLE], ["token_select.coef"])
    assert inert(cfg_factory, ["algo=kl_cov"], ["token_select.coef"]) == {}


def test_std_keys_are_inert_without_a_std_division(cfg_factory):
    keys = ["advantage.eps", "advantage.std", "advantage.baseline"]
    assert set(inert(cfg_factory, ["advantage.scale=none"], keys)) == {"advantage.eps", "advantage.std"}
    assert inert(cfg_factory, ["advantage.scale=batch", "advantage.baseline=leave_one_out"], keys) == {}
