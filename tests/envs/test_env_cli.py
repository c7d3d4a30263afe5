"""`python -m rlx env=arithmetic_retry` end to end on the embedded model (shrunk to seconds): the episode
metrics are logged at every training step, samples.jsonl and heldout.jsonl show each turn and observation."""

from __future__ import annotations

import csv
import json
import math

import pytest

from tests.conftest import REPO, TINY_TASK, run_cli

pytestmark = pytest.mark.slow

EPISODE_COLUMNS = [
    "rollout/turns_mean",
    "rollout/obs_token_frac",
    "reward/turn_1_mean",
    "reward/turn_1_success",
    "reward/turn_2_mean",
    "reward/turn_2_success",
    "rollout/episode_done_frac",
    "rollout/episode_max_turns_frac",
    "rollout/episode_context_frac",
    "rollout/episode_env_error_frac",
]


def test_the_multi_turn_task_runs_end_to_end_and_shows_its_turns(tmp_path, test_cache):
    run_dir = tmp_path / "run"
    args = [*TINY_TASK, "trainer.max_steps=2", "algo.prompts_per_step=4", "algo.group_size=4", "samples_every=1"]
    run_cli(["-m", "rlx", "env=arithmetic_retry", *args, f"run_dir={run_dir}"], REPO, test_cache, check=True)
    with (run_dir / "metrics.csv").open() as handle:
        training = [r for r in csv.DictReader(handle) if r["reward/mean"]]
    assert len(training) == 2
    for row in training:
        turns = float(row["rollout/turns_mean"])
        assert 1.0 <= turns <= 2.0
        ends = sum(float(row[f"rollout/episode_{e}_frac"]) for e in ("done", "max_turns", "context", "env_error"))
        assert ends == pytest.approx(1.0)
        assert float(row["rollout/episode_env_error_frac"]) == 0.0
        # an episode that went on has an observation between its turns; one that stopped has none
        assert (float(row["rollout/obs_token_frac"]) > 0) == (turns > 1.0)
        assert 0.0 <= float(row["reward/turn_1_success"]) <= 1.0
        assert math.isnan(float(row["reward/turn_2_success"])) == (turns == 1.0)
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    episodes = [s["episode"] for s in samples]
    assert episodes and all(len(e["turns"]) in (1, 2) for e in episodes)
    for e in episodes:  # one observation between two turns, none after the last
        assert len(e["observations"]) == len(e["turns"]) - 1
        assert e["turns"][-1]["status"] in ("PASS", "FAIL", "FORMAT")
    held_out = [json.loads(line) for line in (run_dir / "heldout.jsonl").read_text().splitlines()]
    assert held_out and all(len(r["episode"]["turns"]) in (1, 2) for r in held_out)  # greedy episodes
