"""End to end: real (tiny) sweeps through `python -m rlx -m ...`, their reports and their W&B runs."""

from __future__ import annotations

import csv
import json
import math

import matplotlib.image
import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.conftest import run_cli
from tests.sweeps.sweep_helpers import TINY, md_table
from tests.sweeps.wandb_offline import read_run

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # heavy: outside CI's budget (pyproject markers)

GRID = {"algo.epsilon": ["0.1", "0.2"], "algo.beta": ["0.0", "0.04"]}


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory, test_cache):
    """A 2 × 2 sweep (ε × β), logger=wandb with no key and no network, basic launcher."""
    root = tmp_path_factory.mktemp("grid")
    sweep = root / "multirun" / "grid"
    out = run_cli(
        [
            "-m",
            "rlx",
            "-m",
            *[f"{k}={','.join(v)}" for k, v in GRID.items()],
            "logger=wandb",
            *TINY,
            f"hydra.sweep.dir={sweep}",
        ],
        root,
        test_cache,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return sweep, out


def csv_series(path, metric):
    with open(path, newline="") as f:
        return [float(r[metric]) for r in csv.DictReader(f) if r.get(metric) not in (None, "")]


def last_tenth_mean(values):
    k = max(1, math.ceil(len(values) * 0.1))
    return sum(values[-k:]) / k


def test_report_has_one_row_per_run_with_its_overrides_and_logged_metrics(grid_sweep):
    sweep, out = grid_sweep
    assert f"sweep report: {sweep / 'report.md'}" in out.stdout
    rows = md_table((sweep / "report.md").read_text())
    assert len(rows) == 4
    assert sorted((r["algo.epsilon"], r["algo.beta"]) for r in rows) == sorted(
        (e, b) for e in GRID["algo.epsilon"] for b in GRID["algo.beta"]
    )
    for row in rows:
        job = sweep / row["run"].split("]")[0].lstrip("[")
        # the row's override values are that run's: check them against the config the run really used
        used = OmegaConf.load(job / "config.yaml")
        assert float(row["algo.epsilon"]) == used.algo.epsilon and float(row["algo.beta"]) == used.algo.beta
        assert row["status"] == "completed"
        # and its metrics are taken from that run's own logs
        metrics_csv = job / "metrics.csv"
        assert row["reward (final)"] == f"{last_tenth_mean(csv_series(metrics_csv, 'reward/mean')):.3f}"
        assert row["length (final)"] == f"{last_tenth_mean(csv_series(metrics_csv, 'rollout/length_mean')):.1f}"
        kl = csv_series(metrics_csv, "loss/kl")
        assert row["KL (final)"] == (f"{last_tenth_mean(kl):.4f}" if kl else "—")
        summary = json.loads((job / "summary.json").read_text())
        assert row["held-out acc before"] == f"{summary['before']['val/accuracy']:.3f}"
        assert row["after"].strip("*") == f"{summary['after']['val/accuracy']:.3f}"
        assert row["wall s"] == f"{summary['wall_s']:.0f}" and row["steps"] == str(summary["steps"])
    assert any(r["KL (final)"] != "—" for r in rows)  # β > 0 runs log loss/kl


def test_swept_epsilon_is_marked_inert_exactly_where_it_cannot_act(grid_sweep):
    """ε acts only with more than one optimiser step per batch (rlx.inert): each run's inert.json and the
    report agree with the update schedule the run really used."""
    sweep, out = grid_sweep
    single = []
    for job in sorted(sweep.glob("*/config.yaml")):
        algo = OmegaConf.load(job).algo
        inert = json.loads((job.parent / "inert.json").read_text())
        single.append(algo.update_epochs * algo.minibatches == 1)
        assert ("algo.epsilon" in inert) == single[-1], (job, inert)
    text = (sweep / "report.md").read_text()
    assert ("**Inert**: `algo.epsilon` could not change anything in every run" in text) == all(single)
    assert ("algo.epsilon=0.1 has no effect in this run" in out.stdout + out.stderr) == any(single)


def test_plots_exist_and_are_not_blank(grid_sweep):
    sweep, _ = grid_sweep
    for name in ("reward.png", "kl.png", "length.png"):
        img = matplotlib.image.imread(sweep / name)[..., :3]  # [H, W, 3] in [0, 1]
        assert img.shape[0] > 200 and img.shape[1] > 300
        colored = (img.max(-1) - img.min(-1)) > 0.2  # pixels of the coloured run lines (axes are grey)
        assert colored.mean() > 0.002, f"{name} has no coloured lines"
        assert np.std(img) > 0.05, f"{name} is blank"


def test_wandb_offline_runs_share_the_sweep_group_and_log_history(grid_sweep):
    sweep, out = grid_sweep
    assert "W&B report not created: the runs were logged offline" in out.stdout
    runs = [read_run(d) for d in sorted(sweep.glob("*/wandb/offline-run-*"))]
    assert len(runs) == 4
    assert {r["group"] for r in runs} == {"multirun/grid"}  # the sweep's name
    for r in runs:
        assert {"reward/mean", "loss/policy", "rollout/length_mean", "val/accuracy"} <= r["history_keys"]
        assert {"samples/_type", "samples/nrows"} <= r["history_keys"]  # the completions table
        sweep_cfg = r["config"]["sweep"]
        assert sweep_cfg["keys"] == ["algo.epsilon", "algo.beta"]
        assert r["name"] == sweep_cfg["overrides"]  # e.g. "algo.epsilon=0.1 algo.beta=0.04"
        eps, beta = (float(o.split("=")[1]) for o in sweep_cfg["overrides"].split())
        assert r["config"]["algo"]["epsilon"] == eps and r["config"]["algo"]["beta"] == beta
    assert len({r["name"] for r in runs}) == 4


def test_a_sweep_with_a_crashed_job_still_gets_its_report(tmp_path, test_cache):
    sweep = tmp_path / "crash"
    # group_size=1 fails grpo's config check in the job; group_size=2 runs after it
    out = run_cli(
        [
            "-m",
            "rlx",
            "-m",
            "algo.group_size=1,2",
            *[o for o in TINY if not o.startswith("algo.group_size")],
            "trainer.max_steps=1",
            "trainer.val_check_interval=1",
            f"hydra.sweep.dir={sweep}",
        ],
        tmp_path,
        test_cache,
    )
    assert out.returncode != 0  # a sweep with a failed job fails ...
    rows = md_table((sweep / "report.md").read_text())  # ... and still reports
    assert [(r["algo.group_size"], r["status"]) for r in rows] == [("1", "**FAILED**"), ("2", "completed")]
    assert rows[0]["after"] == "—" and rows[1]["after"] != "—"
    assert "ConfigError" in (sweep / "report.md").read_text()
    assert json.loads((sweep / "0" / "status.json").read_text())["status"] == "failed"
    assert (sweep / "reward.png").is_file()
