"""`python -m rlx reward=triton data=kernelbench data.path=<dir>` trains on a directory of KernelBench problem
files: one RL step with the tiny model (no warm start: KernelBench has no teacher answers), the level and the
shrink said in the run's first lines, the prompts KernelBench's own."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from rlx.data.kernelbench.prompt import PROBLEM_STATEMENT
from tests.conftest import output, run_cli

PROBLEMS = Path(__file__).parent / "kernelbench" / "level1"


@pytest.mark.slow
def test_one_rl_step_on_a_directory_of_problem_files(tmp_path, test_cache):
    directory = tmp_path / "problems"
    shutil.copytree(PROBLEMS, directory)
    run = tmp_path / "run"
    proc = run_cli(
        [
            "-m",
            "rlx",
            "reward=triton",
            "data=kernelbench",
            f"data.path={directory}",
            "data.val_size=1",
            "data.chat=false",  # model=tiny's character tokenizer has no chat template
            "data.max_new_tokens=16",
            "model.warm_start=null",
            "model.max_positions=4096",  # a one-shot prompt is ~3400 characters
            "trainer.max_steps=1",
            "trainer.val_check_interval=1",
            "algo.prompts_per_step=2",
            "algo.group_size=2",
            "val_samples=0",
            "reward.seed=0",
            f"hydra.run.dir={run}",
        ],
        tmp_path,
        test_cache,
    )
    assert proc.returncode == 0, output(proc)
    log = proc.stdout + proc.stderr
    assert "data=kernelbench: 3 problems of KernelBench level 1" in log and "torch_in_forward=kernels_only" in log
    assert "3 scaled until inputs and output hold at most 393216 elements" in log
    assert json.loads((run / "summary.json").read_text())["steps"] == 1
    with (run / "metrics.csv").open() as handle:
        step = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(step) == 1 and float(step[0]["reward/infra_frac"]) == 0.0  # the sandbox never broke
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and all(s["prompt"].startswith(PROBLEM_STATEMENT.strip()) for s in samples)
    assert all("You are given the following architecture:\n\n\n" in s["prompt"] for s in samples)
