"""Sampler state through a checkpoint (exact resume), and the trainer's rounds loop (`collect`) driving a
sampler with scripted rewards instead of a model."""

from __future__ import annotations

import io
import types

import pytest
import torch
from curriculum_script import GROUP, group_rewards, rows, run_steps

import rlx.rollout.collect as collect_module
from rlx.curriculum.band import LearnableBandSampler
from rlx.curriculum.dynamic import DynamicSampler
from rlx.curriculum.sorted import SortedSampler
from rlx.curriculum.uniform import UniformSampler
from rlx.rollout.batch import RolloutBatch

FACTORIES = {
    "uniform": lambda: UniformSampler(seed=7),
    "sorted": lambda: SortedSampler(key="difficulty", descending=False, pace_start=0.25, pace_steps=6, seed=7),
    "learnable_band": lambda: LearnableBandSampler(lo=0.1, hi=0.9, prior=0.5, ema=0.5, explore=0.3, seed=7),
    "dynamic_sampling": lambda: DynamicSampler(oversample=2.0, max_rounds=4, seed=7),
}


def through_checkpoint(state: dict) -> dict:
    """What RLModule.on_save_checkpoint / on_load_checkpoint do to the sampler's state: torch.save inside the
    checkpoint dict, then a load that accepts only plain data (weights_only=True)."""
    buffer = io.BytesIO()
    torch.save({"rlx": {"sampler": state}}, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)["rlx"]["sampler"]


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_state_round_trip_resumes_exactly(name):
    original = FACTORIES[name]()
    original.bind(rows(30))
    run_steps(original, steps=5, per_step=4)
    restored = FACTORIES[name]()
    restored.bind(rows(30))
    restored.load_state_dict(through_checkpoint(original.state_dict()))
    # Both continue from step 5 with the same reward stream: every choice and metric must agree.
    assert run_steps(restored, steps=6, per_step=4, first_step=5) == run_steps(original, 6, 4, first_step=5)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_state_from_other_data_is_refused(name):
    original = FACTORIES[name]()
    original.bind(rows(30))
    other = FACTORIES[name]()
    other.bind(rows(12))
    with pytest.raises(ValueError, match="for 30 training prompts but this run has 12"):
        other.load_state_dict(original.state_dict())


NO_TOKENIZER = types.SimpleNamespace(pad_token_id=0)  # collect reads only the pad id when joining rounds
NO_ROLLOUT = collect_module.Rollout(None, NO_TOKENIZER, None, None)  # generate_and_score is faked


def fake_generate_and_score(rollout, data, indices, config, timer):
    """A round of `collect` without a model: one token per completion, rewards from the scripted stream."""
    group_size = config.group_size
    n = len(indices) * group_size
    rewards = torch.tensor([r for i in indices for r in group_rewards(i)])
    return RolloutBatch(
        input_ids=torch.ones(n, 2, dtype=torch.long),
        attention_mask=torch.ones(n, 2, dtype=torch.long),
        response_mask=torch.ones(n, 1, dtype=torch.long),
        group_index=torch.arange(len(indices)).repeat_interleave(group_size),
        prompt_index=torch.tensor(indices).repeat_interleave(group_size),
        rewards=rewards,
        valid=torch.ones(n, dtype=torch.bool),
        truncated=torch.zeros(n, dtype=torch.bool),
        completions=["x"] * n,
        statuses=["PASS"] * n,
    )


def test_collect_fills_a_dynamic_sampling_batch_with_informative_groups(monkeypatch):
    monkeypatch.setattr(collect_module, "generate_and_score", fake_generate_and_score)
    sampler = DynamicSampler(oversample=3.0, max_rounds=10, seed=0)
    sampler.bind(rows(300))
    requests = []
    sample = sampler.sample
    monkeypatch.setattr(sampler, "sample", lambda count: requests.append(count) or sample(count))
    sampler.begin_step(0)
    batch, stats = collect_module.collect(
        NO_ROLLOUT, sampler, rows(300), collect_module.RolloutConfig(8, GROUP, 1, 1.0, None)
    )
    assert batch.group_index.unique().tolist() == list(range(8))  # trimmed to exactly the step's prompts
    assert all(int(i) % 3 == 1 for i in batch.prompt_index)  # only mixed-reward groups
    assert stats.batch_groups == 8 and stats.batch_zero_std_groups == 0
    assert requests[0] == 8  # collect asks for what is missing; the sampler generates ceil(3 * 8) = 24
    assert stats.groups_generated >= 24 and stats.rounds == len(requests)
    assert stats.zero_std_groups > 0  # the dropped groups still count as generated waste
    assert sampler.metrics()["curriculum/rounds"] == float(stats.rounds)


def test_collect_with_uniform_reports_the_batch_zero_variance(monkeypatch):
    monkeypatch.setattr(collect_module, "generate_and_score", fake_generate_and_score)
    sampler = UniformSampler(seed=0)
    sampler.bind(rows(12))
    sampler.begin_step(0)
    batch, stats = collect_module.collect(
        NO_ROLLOUT, sampler, rows(12), collect_module.RolloutConfig(12, GROUP, 1, 1.0, None)
    )
    # One epoch of the 12 prompts: 8 of them all-pass or all-fail.
    assert (stats.rounds, stats.batch_groups, stats.batch_zero_std_groups, stats.zero_std_groups) == (1, 12, 8, 8)
