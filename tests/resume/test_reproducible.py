"""Same config, same seed: bitwise-identical metrics (CPU) whether the warm start was trained in this process
or loaded from the cache, and whether the run is alone or a later job of a multirun (the basic launcher runs
every job in one process): no RNG state leaks from the warm start or from an earlier job."""

from __future__ import annotations

import pytest

from tests.resume.runs import TINY, metric_rows, rlx, samples

pytestmark = pytest.mark.slow
ARGS = [*TINY, "trainer.max_steps=3"]


def test_cold_cache_warm_cache_and_multirun_job_write_identical_metrics(tmp_path):
    cache = tmp_path / "cache"
    cold = rlx([*ARGS, f"hydra.run.dir={tmp_path / 'cold'}"], cache)  # trains the warm start in this process
    warm = rlx([*ARGS, f"hydra.run.dir={tmp_path / 'warm'}"], cache)  # loads it from the cache
    assert cold.returncode == 0 and warm.returncode == 0, cold.stdout[-2000:] + warm.stdout[-2000:]
    assert "warm start attempt 1" in cold.stdout and "warm start: reusing" in warm.stdout
    # job 1 trains its own warm start after job 0 (another seed) has trained one and run its RL steps
    sweep = rlx(
        ["-m", "~hydra/callbacks", "seed=1,0", *ARGS, f"hydra.sweep.dir={tmp_path / 'sweep'}"], tmp_path / "fresh-cache"
    )
    assert sweep.returncode == 0, sweep.stdout[-3000:]
    assert sweep.stdout.count("warm start attempt 1: final loss") == 2  # one warm start trained per seed

    rows = metric_rows(tmp_path / "cold")
    assert len([r for r in rows if r["reward/mean"]]) == 3
    assert metric_rows(tmp_path / "warm") == rows
    assert metric_rows(tmp_path / "sweep" / "1") == rows
    assert samples(tmp_path / "warm") == samples(tmp_path / "cold") == samples(tmp_path / "sweep" / "1")
    assert metric_rows(tmp_path / "sweep" / "0") != rows  # and the seed does matter
