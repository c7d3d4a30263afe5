"""All five presets through the CLI in one sweep (shrunk to seconds), PPO resume with its critic, and an
incompatible combination failing at start with the fix."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FAST_MODEL, REPO

pytestmark = pytest.mark.slow

SHORT = ["trainer.val_check_interval=2", "algo.prompts_per_step=4", "data.val_size=64",
         "checkpoint.every_n_steps=2", "samples_every=2"]
EVERY_VARIANT = ["loss/policy", "loss/clipfrac", "loss/approx_kl", "adv/mean", "adv/std", "reward/zero_std_frac",
                 "rollout/length_mean"]


def rlx(args, cache, check=True):
    env = {**os.environ, "RLX_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "rlx", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def columns(run_dir):
    with (run_dir / "metrics.csv").open() as handle:
        return set(csv.DictReader(handle).fieldnames)


def test_sweep_of_all_five_presets_then_resume_ppo(tmp_path, test_cache):
    sweep = tmp_path / "sweep"
    rlx(["-m", "algo=ppo,grpo,dr_grpo,dapo,reinforce", *FAST_MODEL, *SHORT, "trainer.max_steps=2",
         f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=${algo.name}"], test_cache)
    for algo in ("ppo", "grpo", "dr_grpo", "dapo", "reinforce"):
        summary = json.loads((sweep / algo / "summary.json").read_text())
        assert summary["steps"] == 2, algo
        cols = columns(sweep / algo)
        assert set(EVERY_VARIANT) <= cols, (algo, set(EVERY_VARIANT) - cols)
        assert ("loss/value" in cols) == (algo == "ppo")
        assert ("loss/kl" in cols) == (algo == "grpo")  # the only preset that loads a reference model
    ckpt = sweep / "ppo" / "checkpoints" / "last.ckpt"
    resumed = tmp_path / "ppo-resumed"
    rlx(["algo=ppo", *FAST_MODEL, *SHORT, "trainer.max_steps=3", f"ckpt_path={ckpt}", f"hydra.run.dir={resumed}"],
        test_cache)
    assert json.loads((resumed / "summary.json").read_text())["steps"] == 3


def test_incompatible_combination_fails_at_start(tmp_path, test_cache):
    proc = rlx(["algo=dapo", "algo.beta=0.1", f"hydra.run.dir={tmp_path / 'bad'}"], test_cache, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "Set algo.reference=true, or algo.beta=0" in proc.stdout + proc.stderr
    proc = rlx(["algo=grpo", "advantage=gae", f"hydra.run.dir={tmp_path / 'bad2'}"], test_cache, check=False)
    assert proc.returncode != 0 and "use algo=ppo" in proc.stdout + proc.stderr
