"""End to end: `python -m rlx +sweeps=seed_claims` shrunk to one RL step writes claims.md with a row per claim,
the runs each comes from and a verdict, next to report.md; every run directory has its own plots."""

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
    "seed=0",
]


def test_seed_claims_sweep_writes_claims_md(tmp_path, test_cache):
    sweep = tmp_path / "claims"
    out = run_cli(["-m", "rlx", "+sweeps=seed_claims", *SHRUNK, f"hydra.sweep.dir={sweep}"], tmp_path, test_cache, 900)
    assert out.returncode == 0, out.stderr[-4000:]
    jobs = sorted(sweep.glob("*/.hydra/overrides.yaml"))
    assert len(jobs) == 9  # one per variant of sweeps/claims/, one seed
    text = (sweep / "claims.md").read_text()
    rows = md_table(text)
    assert len(rows) == 12
    assert all(r["verdict"] in ("**holds**", "**does not hold**", "**inconclusive**") for r in rows)
    assert all(r["verdict"] == "**inconclusive**" for r in rows)  # one seed decides nothing
    assert rows[0]["claim"].startswith("(a) ppo") and rows[0]["runs"].startswith("ppo: ")
    assert "Verdict rule:" in text and "+sweeps=seed_claims" in text
    for job in (j.parent.parent for j in jobs):
        assert json.loads((job / "status.json").read_text())["status"] == "completed"
        assert {"reward.png", "kl.png", "length.png", "report.md", "footprint.json"} <= {p.name for p in job.iterdir()}
    footprint = json.loads((sweep / "0" / "footprint.json").read_text())  # job 0 is ppo: it has a critic
    assert footprint["state_bytes"]["critic_weights"] > 0 and footprint["start_model"]
    assert (sweep / "report.md").is_file()
