"""The sweep report over seeds (mean ± std per configuration, bands, "best" only beyond the spread), inert swept
keys, and the single-run report — all on hand-written run directories."""

from __future__ import annotations

import matplotlib.image
import numpy as np

from rlx.report import write_report
from rlx.report.aggregate import group_by_config, leader, mean_std
from rlx.report.runs import load_sweep
from tests.conftest import REPO, run_cli
from tests.sweeps.sweep_helpers import md_table
from tests.sweeps.synthetic import write_job


def seed_sweep(root, afters: dict[str, list[float]]):
    """Jobs for each (β, seed): reward curves and held-out accuracy `afters[β][seed]` (before = 0.3)."""
    n = 0
    for c, (beta, values) in enumerate(afters.items()):
        for seed, after in enumerate(values):
            rewards = [0.2 + 0.3 * c + 0.01 * i * (1 + seed) for i in range(30)]
            write_job(
                root / str(n),
                [f"algo.beta={beta}", f"seed={seed}"],
                {"reward/mean": rewards, "rollout/length_mean": [5.0] * 30},
                {"before": {"val/accuracy": 0.3}, "after": {"val/accuracy": after}, "wall_s": 10.0 + n, "steps": 30},
            )
            n += 1
    return root


def test_mean_std_and_grouping(tmp_path):
    mean, std = mean_std([0.5, 0.7])
    assert mean == 0.6 and abs(std - 0.1414214) < 1e-6  # sample std: sqrt(((0.1)² + (0.1)²) / 1)
    assert mean_std([0.5]) == (0.5, None) and mean_std([None]) == (None, None)
    _, runs = load_sweep(seed_sweep(tmp_path, {"0": [0.5, 0.6], "0.04": [0.8, 0.9]}))
    configs = group_by_config(runs, ["algo.beta", "seed"])
    assert [c.values for c in configs] == [{"algo.beta": "0"}, {"algo.beta": "0.04"}]
    assert [c.seeds() for c in configs] == [["0", "1"], ["0", "1"]]


def test_best_is_marked_only_beyond_the_spread(tmp_path):
    # β=0.04 leads by 0.3 (0.85 vs 0.55) with stds 0.071: marked
    rows = md_table(write_report(seed_sweep(tmp_path / "a", {"0": [0.5, 0.6], "0.04": [0.8, 0.9]})).read_text())
    assert rows[0]["after"] == "0.550 ± 0.071" and rows[1]["after"] == "**0.850 ± 0.071**"
    assert rows[1]["seeds"] == "0, 1" and rows[1]["completed"] == "2/2" and rows[1]["Δ"] == "+0.550 ± 0.071"
    # a lead of 0.05 with stds of 0.28: nothing is bold, and the report says why
    text = write_report(seed_sweep(tmp_path / "b", {"0": [0.4, 0.8], "0.04": [0.45, 0.85]})).read_text()
    config_table = text.split("## Paired")[0]  # the paired table's outcomes are bold by design
    assert "**" not in "".join(line for line in config_table.splitlines() if line.startswith("|"))
    assert "within the seed-to-seed spread" in text
    # one seed per configuration: spread unknown, so the seed-aware rule marks nothing
    _, runs = load_sweep(seed_sweep(tmp_path / "c", {"0": [0.4], "0.04": [0.9]}))
    assert leader(group_by_config(runs, ["algo.beta"]), lambda r: r.held_out("after")).index is None


def test_seed_plots_draw_one_band_per_configuration(tmp_path):
    sweep = seed_sweep(tmp_path, {"0": [0.5, 0.6], "0.04": [0.8, 0.9]})
    write_report(sweep)
    img = matplotlib.image.imread(sweep / "reward.png")[..., :3]  # [H, W, 3]
    tinted = (img.max(-1) - img.min(-1)) > 0.05  # the lines and their (lighter) bands; axes and grid are grey
    assert tinted.mean() > 0.05 and np.std(img) > 0.05


def test_swept_key_inert_in_every_run_is_marked(tmp_path):
    why = "one optimiser step per rollout batch: the ratio is exactly 1"
    for n, eps in enumerate(["0.1", "0.2"]):
        write_job(
            tmp_path / str(n),
            [f"algo.epsilon={eps}"],
            {"reward/mean": [0.1, 0.2]},
            {"after": {"val/accuracy": 0.5}},
            inert={"algo.epsilon": why},
        )
    text = write_report(tmp_path).read_text()
    assert f"**Inert**: `algo.epsilon` could not change anything in every run: {why}" in text
    assert [r["algo.epsilon"] for r in md_table(text)] == ["0.1", "0.2"]  # inert everywhere: said once, above


def test_swept_key_inert_in_some_runs_is_marked_per_cell(tmp_path):
    write_job(
        tmp_path / "0",
        ["algo.epsilon=0.1", "algo.update_epochs=1"],
        {"reward/mean": [0.1]},
        inert={"algo.epsilon": "one update"},
    )
    write_job(tmp_path / "1", ["algo.epsilon=0.1", "algo.update_epochs=2"], {"reward/mean": [0.1]}, inert={})
    (tmp_path / "sweep.json").write_text('{"swept": ["algo.epsilon", "algo.update_epochs"]}')
    text = write_report(tmp_path).read_text()
    rows = md_table(text)
    assert rows[0]["algo.epsilon"] == "0.1 (inert)" and rows[1]["algo.epsilon"] == "0.1"
    assert "in runs 0:" in text


def test_single_run_report_from_the_cli(tmp_path):
    run = write_job(
        tmp_path / "run",
        ["algo.beta=0.04"],
        {
            "reward/mean": [0.1 * i for i in range(25)],
            "loss/kl": [0.001 * i for i in range(25)],
            "loss/approx_kl": [1e-4] * 25,
            "rollout/length_mean": [4 + 0.1 * i for i in range(25)],
            "rollout/length_fail": [5.0] * 25,
        },
        {"before": {"val/accuracy": 0.3}, "after": {"val/accuracy": 0.7}, "steps": 25, "wall_s": 9.5},
        status=None,
        inert={"algo.epsilon": "one update"},
    )
    out = run_cli(["-m", "rlx.report", str(run)], REPO, tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    text = (run / "report.md").read_text()
    row = md_table(text)[0]
    assert row["held-out acc before"] == "0.300" and row["after"] == "0.700" and row["steps"] == "25"
    assert row["reward (final)"] == f"{(2.3 + 2.4 + 2.2) / 3:.3f}"  # the last 10% of 25 steps: 3 steps
    assert "**Inert**: `algo.epsilon`" in text
    for name in ("reward.png", "kl.png", "length.png"):
        img = matplotlib.image.imread(run / name)[..., :3]
        assert ((img.max(-1) - img.min(-1)) > 0.2).mean() > 0.002, f"{name} has no coloured lines"


def test_report_cli_refuses_a_directory_that_is_neither(tmp_path):
    out = run_cli(["-m", "rlx.report", str(tmp_path)], REPO, tmp_path, timeout=120)
    assert out.returncode == 1 and "neither a sweep directory" in out.stderr
