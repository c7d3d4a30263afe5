"""A run whose reward keeps failing (every sample INFRA) stops after infra_stop.steps steps, after writing its
checkpoint, with one message naming the reward, instead of training on nothing to the end; a run shorter than
that limit that scores nothing at all never ends "completed" with an accuracy computed from zeros."""

from __future__ import annotations

import json

import pytest

from tests.resume.runs import TINY, checkpoint, rlx, training_steps

pytestmark = pytest.mark.slow


def the_one_error(done) -> str:
    """The run's last output line, which must be its only error line (the log above it shows the reward's own
    failures, with their tracebacks, as the message says; the run's error itself is no traceback)."""
    assert "InfraError" not in done.stdout and "held-out accuracy" not in done.stdout, done.stdout[-3000:]
    errors = [line for line in done.stdout.splitlines() if line.startswith("rlx: error:")]
    assert len(errors) == 1 and done.stdout.strip().splitlines()[-1] == errors[0], done.stdout[-3000:]
    return errors[0]


def test_a_reward_that_cannot_score_stops_the_run_naming_it(tmp_path, test_cache):
    run = tmp_path / "run"
    done = rlx(
        [
            *TINY,
            "reward._target_=tests.resume.broken_reward.ScorerDownInTraining",
            "infra_stop.steps=2",
            "trainer.max_steps=6",
            f"hydra.run.dir={run}",
        ],
        test_cache,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    last = the_one_error(done)
    assert last.startswith(
        "rlx: error: stopped after step 1: the reward ScorerDownInTraining (tests.resume.broken_reward)"
    ), last
    assert "2 steps in a row" in last and "infra_stop.max_frac" in last
    assert training_steps(run) == [0, 1]
    assert checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 2  # written before it stopped
    summary = json.loads((run / "summary.json").read_text())  # what happened, and what the run leaves
    assert summary["status"] == "failed" and summary["error"] == last.removeprefix("rlx: error: ")
    assert summary["steps"] == 2 and summary["checkpoint"] == str(run / "checkpoints" / "last.ckpt")
    assert json.loads((run / "status.json").read_text())["status"] == "failed"


def test_a_reward_that_scores_nothing_stops_before_rl(tmp_path, test_cache):
    """Every held-out row INFRA before RL (the run is shorter than the INFRA stop): the run stops there, naming
    the reward, instead of training on nothing and printing "held-out accuracy 0.000 -> 0.000"."""
    run = tmp_path / "run"
    done = rlx(
        [*TINY, "reward._target_=tests.resume.broken_reward.ScorerDown", "trainer.max_steps=1", f"hydra.run.dir={run}"],
        test_cache,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    last = the_one_error(done)
    assert "nothing was scored: the reward ScorerDown (tests.resume.broken_reward)" in last, last
    assert "any of the 9 held-out rows before RL" in last
    assert json.loads((run / "status.json").read_text())["status"] == "failed"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["after"] is None and summary["steps"] == 0
    assert training_steps(run) == []


def test_a_run_none_of_whose_steps_scored_is_not_completed(tmp_path, test_cache):
    """The held-out rows score, the RL steps' samples never do, and the run is shorter than infra_stop.steps."""
    run = tmp_path / "run"
    done = rlx(
        [
            *TINY,
            "reward._target_=tests.resume.broken_reward.ScorerDownInTraining",
            "trainer.max_steps=2",
            f"hydra.run.dir={run}",
        ],
        test_cache,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    last = the_one_error(done)
    assert "nothing was scored" in last and "any sample of the run's 2 RL steps" in last, last
    assert training_steps(run) == [0, 1]  # the metrics are kept
    assert json.loads((run / "summary.json").read_text())["status"] == "failed"
