"""A signal or a full disk at a chosen point of a real run (tests/resume/faulty.py injects it deterministically):
one line that says what happened and what to do, exit status 128 + the signal (or 1), status.json and
summary.json saying the same, the metrics of every step done kept, no half-written file left, and for a signal
a checkpoint that resumes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FAST_MODEL, REPO, run_cli
from tests.resume.runs import checkpoint, rlx, samples, training_steps

pytestmark = pytest.mark.slow
RUN = [
    *FAST_MODEL,
    "trainer.max_steps=3",
    "trainer.val_check_interval=2",
    "algo.prompts_per_step=2",
    "algo.group_size=2",
    "data.val_size=16",
    "checkpoint.every_n_steps=1",
    "samples_every=1",
]


def faulty(fault: str, run: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    """`python -m rlx <RUN> <extra>` into `run` with `fault` injected (tests/resume/faulty.py)."""
    return run_cli(["-m", "tests.resume.faulty", fault, f"hydra.run.dir={run}", *RUN, *extra], REPO, cache)


def one_line(proc: subprocess.CompletedProcess, start: str) -> str:
    """The run's one closing line on stderr (starting with `start`), with no traceback anywhere."""
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text and "Exception ignored" not in text, text[-4000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), text[-4000:]
    assert "held-out accuracy" not in proc.stdout  # never a completed run's summary line
    return lines[0]


def leftovers(run: Path) -> list[str]:
    """Half-written files of any writer: the checkpoint's partial file, atomic writes' temporaries, a staged
    export."""
    names = (".last.ckpt.partial", ".export.partial")
    return [str(p) for p in run.rglob("*") if p.name in names or p.name.endswith(".tmp")]


def documents(run: Path) -> tuple[dict, dict]:
    return json.loads((run / "status.json").read_text()), json.loads((run / "summary.json").read_text())


@pytest.mark.parametrize(
    ("fault", "signum"),
    [
        ("sigint-in-checkpoint-write", signal.SIGINT),  # from a __del__: where the old handler's raise was lost
        ("sigint-in-generation", signal.SIGINT),
        ("sigterm-in-scoring", signal.SIGTERM),
    ],
)
def test_a_signal_in_the_rl_loop_finishes_the_step_checkpoints_and_stops(fault, signum, tmp_path, test_cache):
    run = tmp_path / "run"
    proc = faulty(fault, run, test_cache)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, proc.stderr[-3000:]
    line = one_line(proc, f"rlx: stopped by {name} after step 1; ")
    assert line.endswith(f"checkpoint {run / 'checkpoints' / 'last.ckpt'}: resume with ckpt_path=last"), line
    assert checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 1  # the step in flight finished
    assert training_steps(run) == [0]  # its metrics row is kept; no step started after it
    state, summary = documents(run)
    assert state["status"] == "stopped" and state["phase"] == "RL" and state["signal"] == name and state["step"] == 1
    assert summary["status"] == "stopped" and summary["error"] == f"stopped by {name}" and summary["steps"] == 1
    assert leftovers(run) == []
    if fault == "sigint-in-checkpoint-write":  # the checkpoint written while the signal came is whole: it resumes
        resumed = rlx([*RUN, f"hydra.run.dir={run}", "ckpt_path=last"], test_cache)
        assert resumed.returncode == 0, resumed.stdout[-3000:]
        assert training_steps(run) == [0, 1, 2]
        assert json.loads((run / "summary.json").read_text())["status"] == "completed"


def test_a_signal_during_the_warm_start_stops_it_and_caches_nothing(tmp_path):
    run, cache = tmp_path / "run", tmp_path / "cold-cache"  # no warm start cached: this run builds one
    proc = faulty("sigterm-in-warm-start", run, cache)  # at the SFT's 5th step, from a __del__
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-3000:]
    one_line(proc, "rlx: stopped by SIGTERM during warm start; no checkpoint yet")
    state = json.loads((run / "status.json").read_text())
    assert state["status"] == "stopped" and state["phase"] == "warm start" and state["signal"] == "SIGTERM"
    assert [p.name for p in (cache / "tiny").iterdir() if not p.name.endswith(".lock")] == []
    assert not (run / "summary.json").exists()  # nothing was built, so nothing to summarise


@pytest.mark.parametrize(
    ("fault", "names"),
    [
        ("enospc-in-checkpoint", "the checkpoint {run}/checkpoints/last.ckpt"),  # half copied onto the full disk
        ("enospc-in-metrics", "{run}/metrics.csv"),  # an append of metrics.csv cut halfway
        ("enospc-in-samples", "into {run}"),  # samples.jsonl: a writer that names no file (rlx.samples)
    ],
)
def test_a_full_disk_ends_the_run_in_one_line_and_loses_nothing(fault, names, tmp_path, test_cache):
    run = tmp_path / "run"
    proc = faulty(fault, run, test_cache)
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_line(proc, f"rlx: error: disk full writing {names.format(run=run)} (")
    assert " free of " in line and "free space there" in line, line
    state, summary = documents(run)
    assert state["status"] == "failed" and "disk full" in state["error"]
    assert summary["status"] == "failed" and summary["error"] == line.removeprefix("rlx: error: ")
    assert training_steps(run) == list(range(summary["steps"]))  # every step done has its metrics row, once
    assert all(row["step"] < summary["steps"] for row in samples(run))  # every line whole (none torn)
    assert leftovers(run) == []
