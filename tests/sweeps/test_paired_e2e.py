"""End to end, the one real multirun of the paired statistics: 5 seeds × a key that cannot change the training
(`samples_every`: how often completions are written to samples.jsonl). Runs of one seed are the same run, so
report.md's paired comparison must say "no detectable effect" for every metric, from real metrics.csv,
summary.json and heldout.jsonl files. Tiny runs (tests/sweeps/sweep_helpers.TINY: 2 RL steps)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.sweeps.sweep_helpers import TINY

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # 10 runs and 5 warm starts: outside CI's 30-minute budget


def test_five_seeds_of_a_key_that_cannot_change_anything_show_no_detectable_effect(tmp_path, test_cache):
    sweep = tmp_path / "inert"
    tiny = [o for o in TINY if not o.startswith("samples_every")]
    out = run_cli(
        ["-m", "rlx", "-m", "samples_every=1,2", "seed=0,1,2,3,4", "val_samples=2", *tiny, f"hydra.sweep.dir={sweep}"],
        tmp_path,
        test_cache,
        1800,  # 10 tiny runs and 5 tiny warm starts: minutes on an idle 2-core machine, a cap for a loaded one
    )
    assert out.returncode == 0, out.stderr[-4000:]
    text = (sweep / "report.md").read_text()
    paired = [line for line in text.split("## Paired comparisons")[1].split("## Per run")[0].splitlines()]
    rows = [line for line in paired if line.startswith("| `samples_every`")]
    metrics = [r.split(" | ")[2] for r in rows]
    assert metrics == [
        "held-out accuracy after RL",
        "sampled pass@1 after RL",
        "reward, last 10% of steps",
        "KL to the reference, last 10% of steps",
        "tokens generated",
    ]
    for r in rows:
        assert "| 5 |" in r and "**no detectable effect**" in r, r  # 5 paired seeds, no effect
    assert "| 2 vs 1 | held-out accuracy after RL | +0.000 [+0.000, +0.000] | 5 | 32 |" in rows[0]
