"""The rollout engine's decode log-probs stand in for the sampling policy's forward in rlx.update.prepare:
in a real prepare() call they give the forward's old_logp, KL-in-reward token rewards and policy/entropy to
1e-5 with no policy forward at all; HF generate, reduced precision, train mode, rollout.reuse_logprobs=false
and a temperature mismatch all fall back to the forward; and a short training run learns the same either way.
"""

from __future__ import annotations

import copy
import csv
import functools
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import rlx.update as update_module
from rlx.models.parts import Models
from rlx.models.reference import FrozenReference
from rlx.models.tiny import build_tiny_llama
from rlx.rollout.batch import concat
from rlx.rollout.collect import Rollout, RolloutConfig, generate_and_score
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate
from rlx.rollout.generation import GenerationRequest
from rlx.train import train
from rlx.update import prepare
from tests.algos.helpers import ScriptedReward, compose_algo
from tests.conftest import TINY_TASK, compose_config

from .conftest import PROMPTS

ROWS = [{"prompt": p} for p in PROMPTS]
REWARDS = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]  # 4 groups of 4
ALGO = [
    "algo=grpo",
    "algo.group_size=4",
    "algo.prompts_per_step=4",
    "data.max_new_tokens=24",
    "algo.beta=0",
]  # 4 minibatches


@pytest.fixture
def counted(llama, monkeypatch):
    """(model, tokenizer, forwards): `forwards[id(m.get_decoder())]` counts the forwards through causal LM m's
    decoder (whether the whole model runs, or the decoder alone under rlx.forward.head's fused head)."""
    model, tok = llama
    forwards: dict[int, int] = {}
    forward = type(model.get_decoder()).forward

    @functools.wraps(forward)
    def counting(self, *args, **kwargs):
        forwards[id(self)] = forwards.get(id(self), 0) + 1
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(model.get_decoder()), "forward", counting)
    return model, tok, forwards


def rollout(model, tok, engine, temperature=1.0):
    torch.manual_seed(0)
    rollout = Rollout(model, tok, engine, ScriptedReward(REWARDS))
    return generate_and_score(rollout, ROWS, [0, 1, 2, 3], RolloutConfig(4, 4, 24, temperature, None))


def engine(reuse: bool = True) -> RolloutEngine:
    return RolloutEngine(compile=False, overlap_scoring=False, reuse_logprobs=reuse)


def without_reuse(batch):
    return replace(batch, sampling_logp=None, sampling_entropy=None, sampling_temperature=None)


@pytest.mark.parametrize("placement", ["loss", "reward"])
def test_prepare_takes_the_engines_logprobs_for_the_forward_and_skips_it(counted, cfg_factory, placement):
    model, tok, forwards = counted
    reference = FrozenReference(build_tiny_llama(tok, 64, 2, 4, 128, 64, 0.2, seed=1).eval())
    algo, advantage = compose_algo(cfg_factory, *ALGO, "algo.beta=0.1", f"kl.placement={placement}")
    batch = rollout(model, tok, engine())
    assert batch.sampling_logp is not None and batch.sampling_temperature == 1.0
    forwards.clear()
    reused, reused_metrics = prepare(batch, algo, advantage, Models(model, reference))
    assert forwards.get(id(model.get_decoder()), 0) == 0  # no forward of the policy
    with reference.forward_model() as ref:
        assert forwards.get(id(ref.get_decoder()), 0) >= 1  # the reference's still runs
    forwards.clear()
    ran, ran_metrics = prepare(without_reuse(batch), algo, advantage, Models(model, reference))
    assert forwards.get(id(model.get_decoder()), 0) >= 1  # the forward the engine's log-probs replace
    mask = batch.response_mask.bool()
    assert mask.sum() > 20 and len(set(mask.sum(-1).tolist())) > 1  # completions of several lengths
    torch.testing.assert_close(reused.old_logp[mask], ran.old_logp[mask], atol=1e-5, rtol=0)
    # token rewards and advantages are sums over up to T tokens of terms built from those log-probs: in float32
    # each of the T additions may round by eps relative to the running total, so beyond the log-probs' own 1e-5
    # they may differ by T * eps of their magnitude (advantages of tens of units here: ~1e-5 more, not 0)
    sums = dict(atol=1e-5, rtol=mask.shape[1] * torch.finfo(torch.float32).eps)
    torch.testing.assert_close(reused.token_rewards, ran.token_rewards, **sums)  # KL in the reward
    torch.testing.assert_close(reused.advantages, ran.advantages, **sums)
    assert abs(float(reused_metrics["policy/entropy"]) - float(ran_metrics["policy/entropy"])) < 1e-5
    assert float(ran_metrics["policy/entropy"]) > 0.5  # a spread-out distribution: a real comparison


def test_one_update_per_batch_takes_the_engines_entropy_and_its_forward_computes_none(
    counted, cfg_factory, monkeypatch
):
    model, tok, _ = counted
    batch = rollout(model, tok, engine())
    forward_algo, advantage = compose_algo(cfg_factory, *ALGO)  # 4 minibatches: prepare runs the forward
    _, forward_metrics = prepare(without_reuse(batch), forward_algo, advantage, Models(model))
    algo, advantage = compose_algo(cfg_factory, *ALGO, "algo.minibatches=1")  # no old log-probs needed
    prepared, metrics = prepare(batch, algo, advantage, Models(model))
    assert prepared.old_logp is None
    assert abs(float(metrics["policy/entropy"]) - float(forward_metrics["policy/entropy"])) < 1e-5
    asked: list[bool] = []
    forward = update_module.forward_logprobs
    # a[5]: forward_logprobs's with_entropy (an entropy_grad flag may follow it)
    monkeypatch.setattr(update_module, "forward_logprobs", lambda *a: (asked.append(a[5]), forward(*a))[1])
    step = functools.partial(
        update_module.policy_step,
        algo=algo,
        policy=copy.deepcopy(model).train(),
        optimisation=update_module.Optimisation(
            torch.optim.SGD(model.parameters(), lr=0.0), lambda loss: loss.backward(), update_module.NonFiniteGuard(3)
        ),
    )
    assert "policy/entropy" not in step(prepared) and asked and not any(asked)
    asked.clear()
    from_forward = step(without_reuse(prepared))  # no engine entropies: the update's forward computes them
    assert all(asked) and abs(float(from_forward["policy/entropy"]) - float(metrics["policy/entropy"])) < 1e-5


def test_hf_generate_reports_no_logprobs_and_prepare_runs_the_forward(counted, cfg_factory):
    model, tok, forwards = counted
    algo, advantage = compose_algo(cfg_factory, *ALGO)
    batch = rollout(model, tok, HFGenerate(overlap_scoring=False))
    assert batch.sampling_logp is None and batch.sampling_entropy is None
    forwards.clear()
    prepared, metrics = prepare(batch, algo, advantage, Models(model))
    assert forwards.get(id(model.get_decoder()), 0) >= 1
    assert prepared.old_logp is not None and "policy/entropy" in metrics


def test_a_temperature_mismatch_runs_the_forward(counted, cfg_factory, caplog):
    model, tok, forwards = counted
    algo, advantage = compose_algo(cfg_factory, *ALGO, "algo.temperature=0.7")
    batch = rollout(model, tok, engine(), temperature=1.0)  # sampled at 1.0, updated at 0.7
    forwards.clear()
    prepared, _ = prepare(batch, algo, advantage, Models(model))
    assert forwards.get(id(model.get_decoder()), 0) >= 1 and "running the sampling policy's forward" in caplog.text
    mask = batch.response_mask.bool()
    assert (prepared.old_logp[mask] - batch.sampling_logp[mask]).abs().max() > 1e-2  # really other log-probs


def test_logprobs_are_reused_only_where_they_are_exact(llama):
    model, tok = llama
    assert engine()(model, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=False, repeats=2)).reusable
    assert not engine(reuse=False)(model, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=False, repeats=2)).reusable
    with torch.autocast("cpu", dtype=torch.bfloat16):  # trainer.precision=bf16-mixed
        assert not engine()(model, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=False, repeats=2)).reusable
    for other in (copy.deepcopy(model).bfloat16(), copy.deepcopy(model).double(), copy.deepcopy(model).train()):
        gen = engine()(other, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=False, repeats=2))
        assert gen.logprobs is not None and not gen.reusable  # reported, but not for the update
        batch = rollout(other, tok, engine())
        assert batch.sampling_logp is None and batch.sampling_entropy is None  # prepare runs the forward


def test_a_batch_joined_from_reusable_and_other_parts_reuses_nothing(llama):
    model, tok = llama
    a, b = rollout(model, tok, engine()), rollout(model, tok, engine())
    assert concat([a, b], tok.pad_token_id).sampling_logp.shape[0] == 32
    assert concat([a, without_reuse(b)], tok.pad_token_id).sampling_logp is None
    other_temperature = replace(b, sampling_temperature=0.7)
    assert concat([a, other_temperature], tok.pad_token_id).sampling_logp is None


@pytest.mark.slow
def test_training_learns_the_same_with_and_without_reuse(tmp_path, test_cache, monkeypatch):
    """The default preset (GRPO, 4 minibatch steps per batch, so the clip acts), 3 steps with each setting:
    the same samples and rewards, and losses, clip fractions and entropies equal to float rounding."""
    monkeypatch.setenv("RLX_CACHE", str(test_cache))
    rows = {}
    for reuse in (True, False):
        cfg = compose_config(
            [
                *TINY_TASK,
                f"rollout.reuse_logprobs={str(reuse).lower()}",
                "algo.prompts_per_step=8",
                "trainer.max_steps=3",
                "trainer.val_check_interval=3",
                "~trainer.callbacks",
                "+trainer.enable_checkpointing=false",
            ],
            tmp_path / str(reuse),
        )
        summary = train(cfg)
        with Path(summary["metrics_csv"]).open() as handle:
            rows[reuse] = [r for r in csv.DictReader(handle) if r.get("loss/clipfrac")]
        rows[reuse, "val"] = summary["after"]["val/accuracy"]
    assert len(rows[True]) == len(rows[False]) == 3
    assert rows[True, "val"] == rows[False, "val"]
    for reused, ran in zip(rows[True], rows[False], strict=True):
        assert reused["reward/mean"] == ran["reward/mean"] and reused["adv/std"] == ran["adv/std"]
        for key in ("loss/policy", "loss/kl", "loss/clipfrac", "policy/entropy", "optim/grad_norm"):
            assert abs(float(reused[key]) - float(ran[key])) < 1e-4, key
    assert max(float(r["loss/clipfrac"]) for r in rows[True]) > 0.01  # the clip acts on the reused old log-probs
    assert min(float(r["optim/grad_norm"]) for r in rows[True]) > 0.1  # every step learns
