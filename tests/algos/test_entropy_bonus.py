"""The entropy bonus (entropy=bonus) and Skywork-OR1's adaptive coefficient (entropy=adaptive): hand-computed values,
the entropy's gradient through the fused LM head against autograd of the plain logits, micro-batch exactness, the
adaptive rule's steps, the coefficient's state through a checkpoint, the inert keys, and that entropy=none leaves
the update as it was."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from rlx.algos.aggregation import seq_mean_token_mean
from rlx.algos.entropy import AdaptiveEntropy, adaptive_entropy_coef, applied_entropy_coef, entropy_bonus
from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.forward.head import head_logprobs
from rlx.forward.logprobs import forward_logprobs, trim_padding
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from tests.algos.helpers import bare_module, bare_trainer, compose_algo, off_policy_steps
from tests.algos.test_micro_batching import FirstCharBelowM, parts  # noqa: F401  (parts: the shared fixture)
from tests.unit.test_inert import inert


# ---------------------------------------------------------------- the pure functions, by hand
def test_bonus_is_the_coefficient_times_the_aggregated_entropy():
    entropy = torch.tensor([[0.5, 1.0], [2.0, 7.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    weights = seq_mean_token_mean(mask)  # [[1/4, 1/4], [1/2, 0]]: each sequence's token mean, then the mean of 2
    # Σ w·H = 0.5/4 + 1.0/4 + 2.0/2 = 0.125 + 0.25 + 1.0 = 1.375 (the masked 7.0 weighs 0); × c = 0.1 → 0.1375
    assert entropy_bonus(entropy, weights, 0.1).item() == pytest.approx(0.1375, abs=1e-7)
    assert entropy_bonus(entropy, weights, 0.0).item() == 0.0


def test_adaptive_rule_steps_up_down_and_clamps():
    def step(c, e):  # target 0.2, Δ 0.005, bounds [0, 0.02]
        return adaptive_entropy_coef(c, e, 0.2, 0.005, 0.0, 0.02)

    assert step(0.01, 0.1) == pytest.approx(0.015)  # below the target: up by Δ
    assert step(0.01, 0.2) == pytest.approx(0.015)  # at the target: up (TRL's `<=`)
    assert step(0.01, 0.3) == pytest.approx(0.005)  # above: down by Δ
    assert step(0.018, 0.1) == 0.02  # 0.023 clamped to the max
    assert step(0.003, 0.3) == 0.0  # −0.002 clamped to the min
    # the applied coefficient: c only while the last measured entropy is at or below the target
    assert applied_entropy_coef(0.01, math.inf, 0.2) == 0.0  # nothing measured yet: TRL's first step has no bonus
    assert applied_entropy_coef(0.01, 0.19, 0.2) == 0.01
    assert applied_entropy_coef(0.01, 0.21, 0.2) == 0.0


def test_adaptive_controller_walks_round_trips_and_ignores_non_finite():
    ctl = AdaptiveEntropy(coef=0.0, target=0.2, delta=0.005, coef_min=0.0, coef_max=0.01)
    applied = []
    for measured in (0.1, 0.1, 0.1, 0.5, float("nan"), 0.15):
        applied.append(ctl.coefficient())
        ctl.observe(measured)
    # c: 0 → 0.005 → 0.01 → 0.01 (max) → 0.005 → (nan: unchanged) → 0.01; applied = c gated on the last e
    assert applied == pytest.approx([0.0, 0.005, 0.01, 0.01, 0.0, 0.0])
    assert (ctl.coef, ctl.last_entropy) == (pytest.approx(0.01), 0.15)
    clone = AdaptiveEntropy(coef=0.0, target=0.2, delta=0.005, coef_min=0.0, coef_max=0.01)
    clone.load_state_dict(ctl.state_dict())
    assert clone.state_dict() == ctl.state_dict() and clone.coefficient() == ctl.coefficient()
    with pytest.raises(ValueError, match="coef_min <= coef <= coef_max"):
        AdaptiveEntropy(coef=2.0, target=0.2, delta=0.005, coef_min=0.0, coef_max=1.0)


def test_bonus_refuses_a_negative_coefficient(cfg_factory):
    with pytest.raises(Exception, match="entropy.coef must be >= 0"):
        compose_algo(cfg_factory, "entropy=bonus", "entropy.coef=-0.1")


# ---------------------------------------------------------------- the entropy's gradient
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_fused_head_entropy_gradient_equals_autograd_of_the_logits(temperature):
    torch.manual_seed(0)
    hidden = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)  # [M, H]
    weight = torch.randn(11, 5, dtype=torch.float64, requires_grad=True)  # [V, H]
    targets = torch.randint(0, 11, (7,))
    a, b = torch.randn(7, dtype=torch.float64), torch.randn(7, dtype=torch.float64)  # weights on log p and on H
    logp, entropy = head_logprobs(hidden, weight, targets, temperature, entropy_grad=True)
    (logp * a + entropy * b).sum().backward()
    fused = (hidden.grad.clone(), weight.grad.clone())
    hidden.grad = weight.grad = None
    log_p = torch.log_softmax(hidden @ weight.T / temperature, -1)  # [M, V] the unfused reference
    reference = -(log_p.exp() * log_p).sum(-1)  # [M]
    (log_p.gather(-1, targets[:, None]).squeeze(-1) * a + reference * b).sum().backward()
    torch.testing.assert_close(entropy, reference, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fused[0], hidden.grad, rtol=1e-10, atol=1e-12)  # float64: rounding only
    torch.testing.assert_close(fused[1], weight.grad, rtol=1e-10, atol=1e-12)
    assert fused[0].abs().max() > 1e-2


def test_forward_entropy_carries_a_gradient_only_for_the_bonus():
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.5, seed=0).double()
    ids = torch.randint(3, 20, (3, 9))
    mask = torch.ones_like(ids)  # no padding: the plain forward's positions are the same
    logp, metric = forward_logprobs(model, ids, mask, 4, 1.0, with_entropy=True)
    assert metric is not None and not metric.requires_grad and logp.requires_grad
    _, entropy = forward_logprobs(model, ids, mask, 4, 1.0, entropy_grad=True)  # [3, 4] through the fused head
    assert entropy is not None and entropy.requires_grad
    torch.testing.assert_close(entropy.detach(), metric, rtol=1e-12, atol=1e-12)
    entropy.sum().backward()
    fused = torch.cat([p.grad.flatten() for p in model.parameters()])
    model.zero_grad(set_to_none=True)
    log_p = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits[:, -5:-1], -1)  # [3, 4, V]
    (-(log_p.exp() * log_p).sum(-1)).sum().backward()  # the same entropies by autograd of the whole model
    plain = torch.cat([p.grad.flatten() for p in model.parameters()])
    torch.testing.assert_close(fused, plain, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------- in the update
BASE = ["algo=grpo", "algo.group_size=4", "algo.prompts_per_step=3", "algo.max_grad_norm=1e9", "data.max_new_tokens=6"]


def optimiser_steps(parts, cfg_factory, option, steps=1):  # noqa: F811
    """off_policy_steps on the shared float64 batch, grpo without KL plus `option`: (metrics, gradient, algo, mb)."""
    _, model, batch = parts
    algo, advantage = compose_algo(cfg_factory, *BASE, "algo.beta=0", *option)
    metrics, grad, mb = off_policy_steps(model, batch, algo, advantage, steps=steps)
    return metrics, grad, algo, mb


@pytest.mark.parametrize(
    "option",
    [["entropy=bonus", "entropy.coef=0.05"], ["entropy=adaptive", "entropy.target=5.0", "entropy.coef=0.05"]],
    ids=["bonus", "adaptive"],
)
def test_bonus_is_unchanged_by_micro_batching(parts, cfg_factory, option):  # noqa: F811
    # two optimiser steps (the adaptive coefficient acts from the second, after its first measurement, which is
    # below the 5-nat target): loss, metrics, gradient and the controller's state equal the unsplit minibatch's
    whole, grad_whole, algo_whole, _ = optimiser_steps(parts, cfg_factory, option, steps=2)
    split, grad_split, algo_split, _ = optimiser_steps(parts, cfg_factory, [*option, "algo.micro_batch_size=1"], 2)
    assert set(whole) == set(split) and {"loss/entropy_bonus", "loss/entropy_coef", "loss/entropy"} <= set(whole)
    for key in whole:
        assert abs(float(whole[key]) - float(split[key])) < 1e-10 * max(1.0, abs(float(whole[key]))), key
    torch.testing.assert_close(grad_split, grad_whole, atol=1e-9, rtol=1e-6)
    assert float(whole["loss/entropy_bonus"]) > 0 and float(whole["loss/entropy_coef"]) > 0
    state_whole, state_split = algo_whole.entropy.state_dict(), algo_split.entropy.state_dict()
    assert state_whole.keys() == state_split.keys()
    for key in state_whole:
        assert state_whole[key] == pytest.approx(state_split[key], rel=1e-12), key


def test_bonus_gradient_is_minus_c_times_the_entropy_gradient(parts, cfg_factory):  # noqa: F811
    # the update's gradient with the bonus minus the one without is −c·∇(Σ w·H), w the policy term's aggregation
    _, grad_none, _, _ = optimiser_steps(parts, cfg_factory, ["entropy=none"])
    _, grad_bonus, algo, mb = optimiser_steps(parts, cfg_factory, ["entropy=bonus", "entropy.coef=0.05"])
    model = parts[1]
    weights = algo.aggregate(mb.loss_mask().double())  # [n, T]
    model.zero_grad(set_to_none=True)
    ids, attention, width = trim_padding(mb.input_ids, mb.attention_mask, mb.response_width)
    _, entropy = forward_logprobs(model, ids, attention, width, 1.0, entropy_grad=True)  # [n, T']
    (entropy * weights[:, :width]).sum().backward()
    expected = -0.05 * torch.cat([p.grad.flatten() for p in model.parameters()])
    # transformers' Llama runs its RMSNorm and attention softmax in float32 even for float64 weights, so every
    # gradient is rounded to float32 on its way back (u = 2⁻²⁴ relative, a few times per layer): the difference of
    # two runs carries that rounding of the whole gradient, 16·u·max|∇| (measured: 4·u)
    atol = 16 * 2.0**-24 * float(grad_none.abs().max())
    torch.testing.assert_close(grad_bonus - grad_none, expected, atol=atol, rtol=0)
    assert expected.abs().max() > 100 * atol  # the bonus's gradient is far above that rounding


def test_entropy_none_adds_nothing_and_a_zero_bonus_changes_no_number(parts, cfg_factory):  # noqa: F811
    # the default's update takes the path it took before the bonus existed; a bonus of 0 (an inert key) goes
    # through the entropy's backward and gives the same loss and gradient bit for bit (0·H adds an exact 0)
    none, grad_none, _, _ = optimiser_steps(parts, cfg_factory, ["entropy=none"])
    zero, grad_zero, _, _ = optimiser_steps(parts, cfg_factory, ["entropy=bonus", "entropy.coef=0"])
    assert not any("entropy" in key for key in none)  # no loss/entropy* column unless the term is configured
    assert float(none["loss/policy"]) == float(zero["loss/policy"])
    assert torch.equal(grad_none, grad_zero)


# ---------------------------------------------------------------- a run, the checkpoint, the inert keys
def test_skywork_preset_trains_and_its_coefficient_survives_a_checkpoint(cfg_factory, tmp_path):
    # three on-policy RL steps of algo=skywork_or1 with a target no entropy reaches (50 nats): the coefficient
    # climbs Δ = 0.005 per step; its state goes through torch.save into a fresh module as a resumed run's does
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    overrides = ["algo=skywork_or1", "algo.prompts_per_step=4", "entropy.target=50"]
    algo, advantage = compose_algo(cfg_factory, *overrides)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    module = bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0))
    torch.manual_seed(0)
    bare_trainer(3).fit(module)
    metrics = module.trainer.callback_metrics
    # applied coefficients 0 (nothing measured), 0.005, 0.010; the state after the third measurement is 0.015
    assert float(metrics["loss/entropy_coef"]) == pytest.approx(0.01)
    assert float(metrics["loss/entropy_bonus"]) > 0 and math.isfinite(float(metrics["loss/entropy"]))
    assert algo.entropy.coef == pytest.approx(0.015)
    checkpoint: dict = {}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, tmp_path / "state.pt")
    fresh_algo, fresh_advantage = compose_algo(cfg_factory, *overrides)
    reward, sampler = FirstCharBelowM(), UniformSampler(0)
    fresh = bare_module(copy.deepcopy(policy), tok, task, reward, fresh_advantage, fresh_algo, sampler)
    fresh.on_load_checkpoint(torch.load(tmp_path / "state.pt", weights_only=False))
    assert fresh_algo.entropy.state_dict() == algo.entropy.state_dict()
    assert fresh_algo.entropy.coefficient() == algo.entropy.coefficient() == pytest.approx(0.015)


def test_entropy_keys_say_when_they_cannot_act(cfg_factory):
    assert "entropy.coef" in inert(cfg_factory, ["entropy=bonus", "entropy.coef=0"], ["entropy.coef"])
    assert inert(cfg_factory, ["entropy=bonus"], ["entropy.coef"]) == {}
    keys = ["entropy.target", "entropy.coef_max"]
    assert set(inert(cfg_factory, ["entropy=adaptive", "entropy.coef_max=0"], keys)) == set(keys)
    assert set(inert(cfg_factory, ["entropy=adaptive", "entropy.delta=0"], ["entropy.coef_min", *keys])) == {
        "entropy.coef_min",
        "entropy.coef_max",
    }
    assert inert(cfg_factory, ["entropy=adaptive"], ["entropy.coef_min", *keys]) == {}
