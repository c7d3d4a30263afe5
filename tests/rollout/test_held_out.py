"""Held-out evaluation's completions (rlx.rollout.held_out) and its sampled pass@1 (val_samples)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from rlx.distributed.evaluation import EvalTally
from rlx.distributed.world import World
from rlx.rewards.base import Status, Verdict
from rlx.rollout.held_out import Scored, append_records, held_out_records, held_out_verdicts
from rlx.train import train
from tests.conftest import FAST_MODEL, TINY_TASK, compose_config


class FakeRollout:
    """Writes, for each prompt copy, the prompt and a draw from torch's global generator (sampled) or `greedy`."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, float, bool, int]] = []

    def __call__(self, policy, tokenizer, request, on_finished=None):
        greedy, repeats = request.greedy, request.repeats
        self.calls.append((len(request.prompts), request.temperature, greedy, repeats))
        texts = [
            f"{p}|{'greedy' if greedy else round(float(torch.rand(())), 6)}"
            for p in request.prompts
            for _ in range(repeats)
        ]
        return SimpleNamespace(texts=texts)  # the one field held_out_verdicts reads


class PromptEcho:
    """PASS where the completion's text names its own row's prompt (so a misaligned verdict fails)."""

    def __call__(self, completions, rows):
        return [
            Verdict(
                1.0 if c.split("|")[0] == r["prompt"] else 0.0,
                Status.PASS if c.split("|")[0] == r["prompt"] else Status.FAIL,
            )
            for c, r in zip(completions, rows, strict=True)
        ]


ROWS = [{"prompt": f"p{i}"} for i in range(5)]


def test_greedy_decodes_each_row_once_in_chunks():
    rollout = FakeRollout()
    verdicts = held_out_verdicts(rollout, None, None, PromptEcho(), ROWS, 8, 2).verdicts
    assert len(verdicts) == 5 and all(v.status == Status.PASS for v in verdicts)
    assert rollout.calls == [(2, 1.0, True, 1), (2, 1.0, True, 1), (1, 1.0, True, 1)]


def test_samples_are_k_per_row_at_the_temperature_seeded_and_leave_the_callers_generator_alone():
    rollout = FakeRollout()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    first = held_out_verdicts(
        rollout, None, None, PromptEcho(), ROWS, 8, 6, samples=3, temperature=0.7, seed=(0, 4, 0, 0)
    ).verdicts
    assert torch.equal(torch.get_rng_state(), state)  # a validation never shifts what training draws next
    assert len(first) == 15 and all(v.status == Status.PASS for v in first)  # row i's samples at 3i .. 3i + 2
    assert rollout.calls == [(2, 0.7, False, 3), (2, 0.7, False, 3), (1, 0.7, False, 3)]  # 6 completions a chunk

    def texts(seed):
        scored = held_out_verdicts(
            FakeRollout(), None, None, PromptEcho(), ROWS, 8, None, samples=3, temperature=0.7, seed=seed
        )
        return scored.texts

    assert texts((0, 4, 0, 0)) == texts((0, 4, 0, 0))  # reproducible: a resumed run evaluates what the first did
    others = [texts(s) for s in ((1, 4, 0, 0), (0, 5, 0, 0), (0, 4, 1, 0), (0, 4, 0, 1))]  # seed, step, rank, batch
    assert all(o != texts((0, 4, 0, 0)) for o in others)


def test_held_out_records_name_each_rows_greedy_answer_and_its_sampled_passes(tmp_path):
    rows = [{"prompt": "p0", "name": "relu 8x64 f32"}, {"prompt": "p1"}]
    greedy = Scored(["a", "b"], [Verdict(1.5, Status.PASS), Verdict(0.0, Status.FORMAT)])
    sampled = Scored(
        ["s"] * 6,
        [Verdict(1.0, Status.PASS), Verdict(0.0, Status.FAIL), Verdict(1.0, Status.PASS)]  # row 0: 2 of 3
        + [Verdict(0.0, Status.FAIL), Verdict(0.0, Status.CRASH), Verdict(1.0, Status.PASS)],  # row 1: 1 of 3
    )
    records = held_out_records(7, rows, greedy, sampled)
    assert records == [
        {
            "step": 7,
            "prompt": "p0",
            "name": "relu 8x64 f32",
            "completion": "a",
            "status": "PASS",
            "reward": 1.5,
            "sampled_passed": 2,
            "sampled": 3,
        },
        {
            "step": 7,
            "prompt": "p1",
            "completion": "b",
            "status": "FORMAT",
            "reward": 0.0,
            "sampled_passed": 1,
            "sampled": 3,
        },
    ]
    assert "sampled" not in held_out_records(7, rows, greedy, None)[0]
    path = tmp_path / "heldout.jsonl"
    append_records(path, records[:1])
    append_records(path, records[1:])
    assert [json.loads(line) for line in path.read_text().splitlines()] == records


def test_pass_at_1_is_the_mean_over_every_sample_of_every_row():
    tally = EvalTally()
    tally.add(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.5]))
    tally.add_sampled(torch.tensor([1.0, 1.0, 0.0, 0.0, 0.0, 1.0]))  # row 0: 2/3, row 1: 1/3
    tally.add(torch.tensor([1.0]), torch.tensor([1.0]))
    tally.add_sampled(torch.tensor([1.0, 1.0, 1.0]))  # row 2: 3/3
    results = tally.results(World(rank=0, size=1), sampled=True)
    assert results == {"val/accuracy": 2 / 3, "val/reward": 2.5 / 3, "val/n": 3.0, "val/pass@1": 6 / 9}
    assert "val/pass@1" not in tally.results(World(rank=0, size=1))


@pytest.mark.slow
def test_val_samples_reports_pass_at_1_which_equals_greedy_accuracy_near_zero_temperature(
    tmp_path, test_cache, monkeypatch
):
    """At τ → 0 a sampled completion is the greedy one, so val/pass@1 = val/accuracy exactly; at the default
    τ it is a real estimate in [0, 1], logged beside val/accuracy at every evaluation, before and after RL."""
    monkeypatch.setenv("RLX_CACHE", str(test_cache))
    common = [*TINY_TASK, "algo.prompts_per_step=4", "algo.group_size=4", "trainer.max_steps=2"]
    cold = train(
        compose_config(
            [*common, "val_samples=3", "algo.temperature=1e-4", "trainer.val_check_interval=1"], tmp_path / "cold"
        )
    )
    for when in ("before", "after"):
        assert cold[when]["val/pass@1"] == cold[when]["val/accuracy"], cold
    assert 0 < cold["before"]["val/accuracy"] < 1, cold  # the task's warm start solves some held-out rows, not all
    warm = train(compose_config([*common, "val_samples=3", "trainer.val_check_interval=1"], tmp_path / "warm"))
    assert 0.0 <= warm["after"]["val/pass@1"] <= 1.0 and warm["after"]["val/n"] == 9
    with Path(warm["metrics_csv"]).open() as handle:
        evaluations = [r for r in csv.DictReader(handle) if r.get("val/accuracy")]
    assert len(evaluations) == 3 and all(r["val/pass@1"] for r in evaluations)  # before, steps 1 and 2 (= after)
    assert warm["after"] == {k: round(float(v), 4) for k, v in evaluations[-1].items() if k.startswith("val/")}
    records = [json.loads(line) for line in Path(warm["held_out"]).read_text().splitlines()]
    assert [r["step"] for r in records] == [0] * 9 + [1] * 9 + [2] * 9  # every row at every evaluation
    for evaluation, step in zip(evaluations, (0, 1, 2), strict=True):
        rows = [r for r in records if r["step"] == step]
        assert sum(r["status"] == "PASS" for r in rows) / 9 == pytest.approx(float(evaluation["val/accuracy"]))
        assert sum(r["sampled_passed"] for r in rows) / 27 == pytest.approx(float(evaluation["val/pass@1"]))
    plain = train(compose_config([*common, "trainer.val_check_interval=2", "trainer.max_steps=3"], tmp_path / "plain"))
    assert "val/pass@1" not in plain["after"]
    with Path(plain["metrics_csv"]).open() as handle:  # the last step is no evaluation step: `after` evaluates
        assert len([r for r in csv.DictReader(handle) if r.get("val/accuracy")]) == 3  # before, step 2, after


def test_val_samples_must_be_a_count(tmp_path):
    from rlx.errors import ConfigError
    from rlx.train import build

    with pytest.raises(ConfigError, match="val_samples is a count"):
        build(compose_config([*FAST_MODEL, "val_samples=-2"], tmp_path))
