"""End to end: a run's learnable_band state (pass-rate table, RNG, position) is saved in the Lightning
checkpoint, and a run resumed from that checkpoint ends in exactly the state of the uninterrupted run.

Uses a random-init tiny model (model.warm_start=null: no SFT, nothing to cache) and 4 prompts × 4
completions per step, so both runs take seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["curriculum=learnable_band", "data=mixed_arithmetic", "model.warm_start=null", "algo.group_size=4",
          "algo.prompts_per_step=4", "algo.beta=0", "trainer.max_steps=4", "trainer.val_check_interval=1000",
          "trainer.callbacks.0.every_n_train_steps=2",
          "+trainer.callbacks.0.save_top_k=-1", "data.val_sizes=[4,4,4]", "samples_every=1000"]


def rlx(run_dir: Path, cache: Path, *extra: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RLX_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-m", "rlx", *COMMON, f"hydra.run.dir={run_dir}", *extra], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def sampler_state(checkpoint: Path) -> dict:
    return torch.load(checkpoint, weights_only=False)["rlx"]["sampler"]


@pytest.mark.slow
def test_resumed_run_ends_in_the_uninterrupted_runs_sampler_state(tmp_path):
    rlx(tmp_path / "full", tmp_path / "cache")
    middle = next((tmp_path / "full" / "checkpoints").glob("*step=2.ckpt"))
    at_two = sampler_state(middle)
    assert sum(e is not None for e in at_two["estimate"]) >= 4  # two steps of groups were observed
    rlx(tmp_path / "resumed", tmp_path / "cache", f"ckpt_path='{middle}'")
    full, resumed = (sampler_state(tmp_path / run / "checkpoints" / "last.ckpt") for run in ("full", "resumed"))
    assert resumed == full
    assert resumed != at_two
