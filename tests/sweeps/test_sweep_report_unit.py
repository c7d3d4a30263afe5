"""The sweep report from hand-written run directories (no training): rows, failed runs, swept keys, PNGs,
status files, and the W&B side without a key or a network."""

from __future__ import annotations

import json

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from rlx.report import write_report
from rlx.report.callback import SweepReport, swept_keys
from rlx.report.runs import differing_keys, load_sweep, split_override, sweep_name, tail_mean
from tests.sweeps.sweep_helpers import md_table


def make_job(sweep, num, overrides, rewards=None, summary=None, status=None):
    job = sweep / str(num)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(OmegaConf.to_yaml(overrides))
    if rewards is not None:
        lines = ["epoch,loss/kl,reward/mean,rollout/length_mean,step,val/accuracy", ",,,,0,0.5"]
        lines += [f"0,{0.01 * i},{r},{3 + i},{i}," for i, r in enumerate(rewards)]
        (job / "metrics.csv").write_text("\n".join(lines) + "\n")
    if summary is not None:
        (job / "summary.json").write_text(json.dumps(summary))
    if status is not None:
        (job / "status.json").write_text(json.dumps(status))
    return job


@pytest.fixture
def sweep(tmp_path):
    sweep = tmp_path / "multirun" / "eps" / "2026-01-01_00-00-00"
    common = ["trainer.max_steps=3"]
    make_job(
        sweep,
        0,
        ["algo.beta=0.0", *common],
        [0.1, 0.2, 0.4],
        {"before": {"val/accuracy": 0.5}, "after": {"val/accuracy": 0.75}, "wall_s": 12.3, "steps": 3},
        {"status": "completed"},
    )
    make_job(
        sweep,
        1,
        ["algo.beta=0.04", *common],
        [0.0, 0.1, 0.3],
        {"before": {"val/accuracy": 0.5}, "after": {"val/accuracy": 0.625}, "wall_s": 11.0, "steps": 3},
        {"status": "completed"},
    )
    make_job(sweep, 2, ["algo.beta=0.1", *common], [0.0], status={"status": "failed", "error": "RuntimeError: boom"})
    (sweep / "sweep.json").write_text(json.dumps({"swept": ["algo.beta"], "command": "python -m rlx ..."}))
    return sweep


def test_report_rows_statuses_and_metrics(sweep):
    path = write_report(sweep)
    text = path.read_text()
    rows = md_table(text)
    assert [r["algo.beta"] for r in rows] == ["0.0", "0.04", "0.1"]
    assert [r["status"] for r in rows] == ["completed", "completed", "**FAILED**"]
    # final = mean of the last 10% of steps (at least one): the last reward here
    assert rows[0]["reward (final)"] == "0.400" and rows[1]["reward (final)"] == "0.300"
    assert rows[0]["held-out acc before"] == "0.500" and rows[0]["after"] == "**0.750**"  # best in bold
    assert rows[1]["Δ"] == "+0.125" and rows[0]["KL (final)"] == "0.0200"
    assert rows[2]["after"] == "—" and "RuntimeError: boom" in text
    assert "trainer.max_steps=3" in text.split("|")[0]  # common overrides above the table, not as a column
    for png in ("reward.png", "kl.png", "length.png"):
        assert (sweep / png).stat().st_size > 5000
    assert (sweep / "report.csv").read_text().count("\n") == 4


def test_a_job_without_status_or_summary_is_not_reported_as_completed(tmp_path):
    make_job(tmp_path, 0, ["a=1"], [0.1], status={"status": "running"})  # killed mid-run
    make_job(tmp_path, 1, ["a=2"], [0.1], status={"status": "completed"})  # returned without a summary
    _, runs = load_sweep(tmp_path)
    assert [r.status for r in runs] == ["running", "failed"]


def test_swept_keys_from_command_line_and_sweeper_params():
    cfg = OmegaConf.create(
        {
            "hydra": {
                "overrides": {
                    "task": ["algo.epsilon=0.1,0.2", "trainer.max_steps=3", "+seed=range(0,3)", "algo=glob(*)"]
                },
                "sweeper": {"params": {"algo.beta": "0,0.04"}},
            }
        }
    )
    assert swept_keys(cfg) == ["algo.epsilon", "seed", "algo", "algo.beta"]


def test_differing_keys_and_helpers(sweep):
    _, runs = load_sweep(sweep)
    assert differing_keys(runs) == ["algo.beta"]
    assert differing_keys(runs[:1], ["algo.beta"]) == ["algo.beta"]  # one run: the declared swept keys
    assert split_override("+algo.beta=0.04") == ("algo.beta", "0.04")
    assert sweep_name(sweep) == "eps/2026-01-01_00-00-00"
    assert tail_mean([(i, float(i)) for i in range(20)]) == 18.5  # last 2 of 20


def test_job_status_files(tmp_path):
    cb = SweepReport(wandb_report=False, fail_on_failed_jobs=False)
    cfg = OmegaConf.create({"hydra": {"runtime": {"output_dir": str(tmp_path)}}})
    cb.on_job_start(cfg)
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "running"
    ret = JobReturn(status=JobStatus.FAILED, _return_value=ValueError("bad value"))
    cb.on_job_end(cfg, ret)
    doc = json.loads((tmp_path / "status.json").read_text())
    assert doc["status"] == "failed" and doc["error"] == "ValueError: bad value"


def test_wandb_report_says_why_in_one_line_without_a_key(sweep, monkeypatch, tmp_path):
    from rlx.report.wandb import report_sweep

    for k in [k for k in __import__("os").environ if k.startswith("WANDB_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    assert report_sweep(sweep) is None  # no run used W&B: nothing to say
    (sweep / "0" / "wandb" / "offline-run-1-abc").mkdir(parents=True)
    line = report_sweep(sweep)
    assert line.count("\n") == 0 and "offline" in line and "wandb sync" in line
    line = report_sweep(sweep, force_online=True)
    assert line.count("\n") == 0 and "no API key" in line


def test_wandb_report_builds_offline_grouped_by_the_swept_keys():
    pytest.importorskip("wandb_workspaces")
    from rlx.report.wandb import build_report

    report = build_report("eps/2026", "rlx", "me", ["algo.beta", "algo"], {"algo": "grpo"}, "| a |", "cmd")
    grid = next(b for b in report.blocks if type(b).__name__ == "PanelGrid")
    runset = grid.runsets[0]
    assert runset.groupby == ["config.algo.beta", "config.choices.algo"]
    assert "eps/2026" in str(runset.filters)
    assert [p.y for p in grid.panels][:3] == [["reward/mean"], ["loss/kl"], ["rollout/length_mean"]]


def test_long_float_overrides_are_shortened_for_display_only():
    from rlx.report.report import short

    assert short("0.18720337598183118") == "0.1872"  # an Optuna sample
    assert [short(v) for v in ("0.04", "1e-4", "grpo", "12345678901")] == ["0.04", "1e-4", "grpo", "12345678901"]


def test_a_run_with_no_learning_signal_is_named_in_the_report(tmp_path):
    sweep = tmp_path / "multirun" / "g" / "2026-01-01_00-00-00"
    done = {"before": {"val/accuracy": 0.5}, "after": {"val/accuracy": 0.5}, "steps": 2}
    for num, fracs in ((0, "1.0,1.0"), (1, "1.0,0.5")):  # run 0: every group all-equal at both steps; run 1: not
        job = make_job(sweep, num, [f"algo.group_size={2 + num}"], summary=done, status={"status": "completed"})
        a, b = fracs.split(",")
        (job / "metrics.csv").write_text(f"reward/mean,reward/zero_std_frac,step\n0.0,{a},0\n0.0,{b},1\n")
    text = write_report(sweep).read_text()
    note = next(line for line in text.splitlines() if line.startswith("**No learning signal**"))
    assert "1 run(s): [0](0/)" in note and "[1]" not in note
    run0, run1 = load_sweep(sweep)[1]
    assert run0.no_learning_signal() and not run1.no_learning_signal()
    (sweep / "0" / "metrics.csv").write_text("step\n")  # a run that logged no RL step is not "no signal"
    assert not load_sweep(sweep)[1][0].no_learning_signal()
