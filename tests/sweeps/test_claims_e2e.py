"""End to end: `python -m rlx +sweeps=seed_claims` shrunk to one seed and one RL step writes claims.md — a row
per claim with its comparison, interval and outcome, the per-seed values and runs under it, the cost per arm and
the provenance — next to report.md; every run directory has its own plots. One seed: every measured row is
"underpowered"; the properties the code guarantees are "by construction"."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.sweeps.sweep_helpers import md_table

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # heavy: outside CI's budget (pyproject markers)

SHRUNK = [
    "trainer.max_steps=1",
    "trainer.val_check_interval=1",
    "algo.prompts_per_step=2",
    "algo.group_size=2",
    "model.warm_start.steps=30",
    "data.warm_start_min_match=0",
    "data.train_size=40",
    "data.val_size=8",
    "val_samples=2",
    "seed=0",
]


def test_seed_claims_sweep_writes_claims_md(tmp_path, test_cache):
    sweep = tmp_path / "claims"
    out = run_cli(["-m", "rlx", "+sweeps=seed_claims", *SHRUNK, f"hydra.sweep.dir={sweep}"], tmp_path, test_cache, 900)
    assert out.returncode == 0, out.stderr[-4000:]
    jobs = sorted(sweep.glob("*/.hydra/overrides.yaml"))
    assert len(jobs) == 10  # one per arm of sweeps/claims/, one seed
    text = (sweep / "claims.md").read_text()
    rows = [r for r in md_table(text) if r["claim"] != "↳"]
    words = [r["outcome"].split("**")[1] for r in rows]
    assert words.count("by construction") == 3 and set(words) == {"underpowered", "by construction"}
    assert rows[0]["claim"] == "(a) RL improves on its SFT start" and rows[0]["prompts"] == "24"
    assert "| ↳ | per seed 0: " in text and "runs grpo: " in text
    assert "- code: `" in text and "+sweeps=seed_claims" in text and "## Cost per arm" in text
    for job in (j.parent.parent for j in jobs):
        assert json.loads((job / "status.json").read_text())["status"] == "completed"
        assert {"reward.png", "kl.png", "length.png", "report.md", "heldout.jsonl"} <= {p.name for p in job.iterdir()}
    assert (sweep / "report.md").is_file()
