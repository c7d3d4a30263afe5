"""Micro-batching is exact: on a float64 tiny model, micro-batched log-probs, values, losses and gradients equal
the unsplit ones for every aggregation mode, the KL term and PPO's value loss; the normaliser is always the
minibatch's. Plus the micro-batch planner's and the padding trimmer's contracts."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.forward.logprobs import plan_micro_batches, sequence_logprobs, trim_padding
from rlx.models.parts import Models
from rlx.models.reference import FrozenReference
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import RolloutConfig
from rlx.update import NonFiniteGuard, Optimisation, critic_step, prepare
from tests.algos.helpers import GradCapture, bare_module, bare_trainer, compose_algo, off_policy_steps, scripted_batch

SPLITS = [["algo.micro_batch_size=3"], ["algo.micro_batch_size=1"], ["algo.micro_batch_tokens=24"]]


@pytest.fixture(scope="module")
def parts():
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=0).double()  # large init: diverse log-probs
    task = ArithmeticTask(10, 99, 10, 0, 0.5, 6, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    torch.manual_seed(0)
    rewards = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    batch = scripted_batch(
        model,
        tok,
        rewards,
        task.train,
        [0, 1, 2],
        RolloutConfig(3, 4, 6, 1.0, None),
    )
    batch = replace(batch, rewards=batch.rewards.double())  # float64 end to end
    assert len(set(batch.response_mask.sum(-1).tolist())) > 1  # completions of different lengths
    return tok, model, batch


def test_plan_covers_every_row_once_and_respects_the_budget():
    lengths = torch.tensor([5, 9, 3, 12, 7, 7, 2, 30])
    for size, tokens in ((None, None), (3, None), (None, 24), (2, 24), (None, 10)):
        plan = plan_micro_batches(lengths, size, tokens)
        assert sorted(torch.cat(plan).tolist()) == list(range(8))
        for rows in plan:
            assert size is None or len(rows) <= size
            if tokens is not None and len(rows) > 1:
                assert len(rows) * int(lengths[rows].max()) <= tokens
    assert [r.tolist() for r in plan_micro_batches(lengths, 3, None)] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_trimming_drops_only_unattended_columns(parts):
    _, model, batch = parts
    ids, mask, width = trim_padding(batch.input_ids[:2], batch.attention_mask[:2], batch.response_width)
    assert mask[:, 0].any() and mask[:, -1].any()  # no all-padding column at either end
    assert width == int(batch.response_mask[:2].sum(-1).max())
    with torch.no_grad():
        whole = sequence_logprobs(model, batch.input_ids, batch.attention_mask, batch.response_width, 1.0, None)
        trimmed = sequence_logprobs(model, ids, mask, width, 1.0, None)
    torch.testing.assert_close(trimmed, whole[:2, :width], atol=1e-12, rtol=0)


@pytest.mark.parametrize("split", SPLITS, ids=lambda s: s[0])
def test_prepare_is_unchanged_by_micro_batching(parts, cfg_factory, split):
    tok, model, batch = parts
    reference = FrozenReference(build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=1).double())
    critic_overrides = [
        "algo=ppo",
        "algo.group_size=4",
        "algo.prompts_per_step=3",
        "algo.minibatches=2",
        "algo.beta=0.1",
        "data.max_new_tokens=6",
    ]
    outs = []
    for extra in ([], split):
        algo, advantage = compose_algo(cfg_factory, *critic_overrides, *extra)
        torch.manual_seed(0)
        critic = algo.critic.build(model).double()
        torch.nn.init.normal_(critic.head.weight)  # non-zero values
        outs.append(prepare(batch, algo, advantage, Models(model, reference, critic))[0])
    whole, split_ = outs
    mask = whole.response_mask.bool()
    for name in ("ref_logp", "old_logp", "values", "token_rewards", "advantages", "returns"):
        a, b = getattr(whole, name), getattr(split_, name)
        torch.testing.assert_close(a[mask], b[mask], atol=1e-10, rtol=0, msg=name)


@pytest.mark.parametrize("aggregate", ["token_mean", "seq_mean_token_mean", "seq_sum_constant"])
@pytest.mark.parametrize("split", SPLITS, ids=lambda s: s[0])
def test_policy_loss_and_gradient_are_unchanged_by_micro_batching(parts, cfg_factory, aggregate, split):
    tok, model, batch = parts
    reference = FrozenReference(build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=1).double())
    base = [
        "algo=grpo",
        "algo.group_size=4",
        "algo.prompts_per_step=3",
        f"aggregate={aggregate}",
        "algo.max_grad_norm=1e9",
        "data.max_new_tokens=6",
    ]
    results = []
    for extra in ([], split):
        algo, advantage = compose_algo(cfg_factory, *base, *extra)
        metrics, grad, _ = off_policy_steps(model, batch, algo, advantage, reference)  # ratios off 1: the clip acts
        results.append((metrics, grad))
    (whole, grad_whole), (parts_, grad_parts) = results
    assert whole["loss/clipfrac"] > 0 and whole["loss/kl"] > 0
    for key in ("loss/policy", "loss/kl", "loss/clipfrac", "loss/clipfrac_low", "loss/approx_kl_k1"):
        assert abs(float(whole[key]) - float(parts_[key])) < 1e-10, key
    torch.testing.assert_close(grad_parts, grad_whole, atol=1e-9, rtol=1e-6)
    assert grad_whole.abs().max() > 1e-3


@pytest.mark.parametrize("split", SPLITS, ids=lambda s: s[0])
def test_value_loss_and_gradient_are_unchanged_by_micro_batching(parts, cfg_factory, split):
    _, model, batch = parts
    base = [
        "algo=ppo",
        "algo.group_size=4",
        "algo.prompts_per_step=3",
        "algo.critic.max_grad_norm=1e9",
        "data.max_new_tokens=6",
    ]
    results = []
    for extra in ([], split):
        algo, advantage = compose_algo(cfg_factory, *base, *extra)
        torch.manual_seed(0)
        critic = algo.critic.build(model).double()
        torch.nn.init.normal_(critic.head.weight)
        prepared, _ = prepare(batch, algo, advantage, Models(model, critic=critic))
        mb = prepared.select(torch.arange(10))
        mb = replace(mb, values=mb.values + 0.3)  # old values off, so the value clip acts
        optimizer = GradCapture(critic.parameters())
        unused = GradCapture(model.parameters())  # the policy's: critic_step steps the critic's alone
        steps = Optimisation(unused, lambda loss: loss.backward(), NonFiniteGuard(1), critic=optimizer)
        metrics = critic_step(mb, algo, critic, steps)
        results.append((metrics, optimizer.grads[0]))
    (whole, grad_whole), (parts_, grad_parts) = results
    assert abs(float(whole["loss/value"]) - float(parts_["loss/value"])) < 1e-10
    torch.testing.assert_close(grad_parts, grad_whole, atol=1e-9, rtol=1e-6)
    assert grad_whole.abs().max() > 1e-3


class FirstCharBelowM:
    """A reward a random model earns about half the time: 1 when the completion starts below "M"."""

    required_fields = ()

    def __call__(self, completions, rows):
        return [Verdict(float(c[:1] < "M"), Status.PASS if c[:1] < "M" else Status.FAIL) for c in completions]


@pytest.mark.parametrize("split", SPLITS[::2], ids=lambda s: s[0])
def test_the_default_preset_trains_the_same_with_micro_batches(cfg_factory, split):
    # three RL steps of the default config (grpo: 4 minibatch steps each, KL to the reference) in float32:
    # micro-batching changes only the floating-point summation order
    runs = []
    for extra in ([], split):
        tok = build_char_tokenizer()
        policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
        algo, advantage = compose_algo(cfg_factory, "algo.prompts_per_step=4", *extra)
        task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
        module = bare_module(
            policy,
            tok,
            task,
            FirstCharBelowM(),
            advantage,
            algo,
            UniformSampler(0),
            reference=FrozenReference(copy.deepcopy(policy)),
        )
        trainer = bare_trainer(3)
        torch.manual_seed(0)
        trainer.fit(module)
        runs.append((dict(trainer.callback_metrics), torch.cat([p.detach().flatten() for p in policy.parameters()])))
    (metrics, weights), (metrics_split, weights_split) = runs
    assert float(metrics["loss/clipfrac"]) >= 0 and float(metrics["adv/std"]) > 0
    for key in ("reward/mean", "loss/policy", "loss/kl", "loss/approx_kl", "policy/entropy"):
        assert abs(float(metrics[key]) - float(metrics_split[key])) <= 1e-4 * max(1.0, abs(float(metrics[key]))), key
    torch.testing.assert_close(weights_split, weights, atol=1e-5, rtol=1e-4)


NEW_OPTIONS = [
    ["policy_loss=sapo"],
    ["policy_loss=gmpo"],
    ["policy_loss=dppo_tv"],
    ["policy_loss=dppo_kl"],
    ["policy_loss=topr"],
    ["token_select=top_entropy"],
    ["token_select=clip_cov", "token_select.fraction=0.2", "token_select.cov_low=-1.0"],
    ["token_select=kl_cov", "token_select.fraction=0.2"],
    ["kl=k3_is"],
]


@pytest.mark.parametrize("option", NEW_OPTIONS, ids=lambda o: o[0])
def test_the_new_shapes_and_selections_are_unchanged_by_micro_batching(parts, cfg_factory, option):
    # each loss shape, token selection (computed once per minibatch, before the split) and the weighted KL: the
    # loss, metrics and gradient of one-sequence micro-batches equal the unsplit minibatch's
    tok, model, batch = parts
    reference = FrozenReference(build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=1).double())
    base = ["algo=grpo", "algo.group_size=4", "algo.prompts_per_step=3", "algo.max_grad_norm=1e9", *option]
    results = []
    for extra in ([], ["algo.micro_batch_size=1"]):
        algo, advantage = compose_algo(cfg_factory, *base, "data.max_new_tokens=6", *extra)
        metrics, grad, _ = off_policy_steps(model, batch, algo, advantage, reference)  # Clip-Cov seeded alike
        results.append((metrics, grad))
    (whole, grad_whole), (parts_, grad_parts) = results
    assert set(whole) == set(parts_)
    for key in whole:
        assert abs(float(whole[key]) - float(parts_[key])) < 1e-10 * max(1.0, abs(float(whole[key]))), key
    torch.testing.assert_close(grad_parts, grad_whole, atol=1e-9, rtol=1e-6)
    assert grad_whole.abs().max() > 1e-3
    if option[0].startswith("token_select=") and option[0] != "token_select=kl_cov":
        assert 0 < float(whole["loss/kept_frac"]) < 1  # the selection dropped some tokens
