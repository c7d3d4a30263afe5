"""A run whose reward keeps failing (every sample INFRA) stops after infra_stop.steps steps, after writing its
checkpoint, with one message naming the reward, instead of training on nothing to the end."""

from __future__ import annotations

import pytest

from tests.resume.runs import TINY, checkpoint, rlx, training_steps

pytestmark = pytest.mark.slow


def test_a_reward_that_cannot_score_stops_the_run_naming_it(tmp_path, test_cache):
    run = tmp_path / "run"
    done = rlx([*TINY, "reward._target_=tests.resume.broken_reward.ScorerDown", "infra_stop.steps=2",
                "trainer.max_steps=6", f"hydra.run.dir={run}"], test_cache)
    assert done.returncode == 1, done.stdout[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("rlx: error: stopped after step 1: the reward ScorerDown (tests.resume.broken_reward)"), last
    assert "2 steps in a row" in last and "infra_stop.max_frac" in last
    assert training_steps(run) == [0, 1]
    assert checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 2  # written before it stopped
    assert not (run / "summary.json").exists()
