"""Running the CLI for the resume tests: a tiny task with a real learning signal, a run killed at a chosen
moment, and metrics.csv / samples.jsonl read back without their wall-clock columns."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import torch

from tests.conftest import REPO, TINY_TASK, start_cli

# The harness's tiny task, 4 prompts per step: an epoch of its 16 training prompts is 4 RL steps.
TINY = [
    *TINY_TASK,
    "algo.prompts_per_step=4",
    "algo.group_size=4",
    "trainer.val_check_interval=3",
    "samples_every=1",
    "samples_per_step=2",
]
CLOCK = ("rollout/seconds", "rollout/tok_per_s", "time/")  # wall-clock columns: the only ones allowed to differ


def rlx(
    args: list[str], cache: Path, stop_at_row: int | None = None, sig: int = signal.SIGKILL, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`python -m rlx *args`; with `stop_at_row`, send `sig` as soon as metrics.csv holds that step's row."""
    run_dir = next((Path(a.split("=", 1)[1]) for a in args if a.startswith("hydra.run.dir=")), None)
    proc = start_cli(["-m", "rlx", *args], REPO, cache)
    if stop_at_row is not None:
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if stop_at_row in training_steps(run_dir):
                proc.send_signal(sig)
                break
            time.sleep(0.01)
    out, _ = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def training_steps(run_dir: Path) -> list[int]:
    """The steps of metrics.csv's training rows (an evaluation row has no reward/mean), in file order."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return [int(r["step"]) for r in csv.DictReader(handle) if r.get("reward/mean")]


def metric_rows(run_dir: Path) -> list[dict]:
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return [{k: v for k, v in row.items() if not k.startswith(CLOCK)} for row in csv.DictReader(handle)]


def samples(run_dir: Path, name: str = "samples.jsonl") -> list[dict]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
