"""`python -m rlx env=verifiers` end to end: a multi-turn verifiers 0.4 taskset written in its own idiom
(tests/envs/vf_fixtures/vf_guess.py: guess a number, "higher"/"lower" between guesses) drives the embedded model
through rlx's engine; each episode's turns and observations reach samples.jsonl, the adapter's drift metrics
reach metrics.csv, and the held-out evaluation runs whole episodes too."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from tests.conftest import REPO, cli_env, run_cli
from tests.envs.fixtures_scripted import extra

extra("verifiers.v1", "verifiers")  # a skip naming the extra; CI's vLLM job requires it

FIXTURES = Path(__file__).resolve().parent / "vf_fixtures"
SHORT = [
    "model.warm_start=null",  # the taskset's prompts are not the warm start's task: a random-init tiny model
    "trainer.max_steps=2",
    "algo.prompts_per_step=2",
    "algo.group_size=2",
    "data.max_new_tokens=3",
    "samples_every=1",
]


def test_a_verifiers_multi_turn_taskset_trains_through_the_cli(tmp_path, test_cache):
    run_dir = tmp_path / "run"
    env = cli_env(test_cache, PYTHONPATH=os.pathsep.join([str(REPO), str(FIXTURES)]))
    args = ["-m", "rlx", "env=verifiers", "env.taskset=vf_guess", "env.max_turns=3", *SHORT, f"run_dir={run_dir}"]
    run_cli(args, REPO, test_cache, env=env, check=True)
    with (run_dir / "metrics.csv").open() as handle:
        training = [r for r in csv.DictReader(handle) if r["reward/mean"]]
    assert len(training) == 2
    for row in training:
        assert 1.0 <= float(row["rollout/turns_mean"]) <= 3.0
        assert float(row["env/vf_drift_frac"]) == 0.0  # every later turn extended the ids sampled before
        assert float(row["rollout/episode_env_error_frac"]) == 0.0
    episodes = [json.loads(line)["episode"] for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert episodes
    for e in episodes:  # the taskset's feedback between turns; an episode ends by a correct guess or max_turns
        assert len(e["observations"]) == len(e["turns"]) - 1
        assert all(o in ("higher", "lower", "no number") for o in e["observations"]), e["observations"]
        assert e["end"] in ("done", "max_turns")
    held_out = [json.loads(line) for line in (run_dir / "heldout.jsonl").read_text().splitlines()]
    assert held_out and all(1 <= len(r["episode"]["turns"]) <= 3 for r in held_out)
