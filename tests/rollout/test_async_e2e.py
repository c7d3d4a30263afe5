"""rollout.max_staleness through the real config and trainer: a short run with k = 2 and the TIS correction logs
the versions each step trained on (staleness 0, 1, 2, 2), the waiting on both sides, the mismatch of the stale
samples against the current policy and the correction's weights, and ends with no sampler process left; and the
same with LoRA adapters."""

from __future__ import annotations

import csv
import multiprocessing
from pathlib import Path

import pytest

from rlx.train import train
from tests.conftest import TINY_TASK, compose_config

pytestmark = pytest.mark.slow


def test_a_k2_run_trains_on_batches_two_versions_behind_with_the_correction(tmp_path, test_cache, monkeypatch):
    monkeypatch.setenv("RLX_CACHE", str(test_cache))
    cfg = compose_config(
        [
            *TINY_TASK,
            "rollout.max_staleness=2",
            "rollout_correction=token_tis",
            "algo.prompts_per_step=4",
            "algo.group_size=4",
            "trainer.max_steps=4",
            "trainer.val_check_interval=4",
            "~trainer.callbacks",
            "+trainer.enable_checkpointing=false",
        ],
        tmp_path / "run",
    )
    summary = train(cfg)
    assert summary["steps"] == 4
    with Path(summary["metrics_csv"]).open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert [float(r["rollout/staleness_max"]) for r in rows] == [0.0, 1.0, 2.0, 2.0]  # min(step, k)
    assert [float(r["rollout/staleness_mean"]) for r in rows] == [0.0, 1.0, 2.0, 2.0]
    for row in rows:
        assert float(row["time/step"]) > 0 and float(row["time/steps_per_hour"]) > 0
        assert float(row["time/wait_trainer"]) >= 0 and float(row["time/wait_sampler"]) >= 0
        assert float(row["time/generate"]) > 0  # the sampler's own generation time
        assert row["loss/correction_weight_mean"] != ""  # TIS weights every step
    # step 0 was sampled by the current weights: μ equals the trainer's π_old to float rounding; later steps
    # were sampled by older versions, and the gap is the measured staleness
    assert float(rows[0]["rollout/logprob_abs_diff_max"]) < 1e-4
    assert min(float(r["rollout/logprob_abs_diff_mean"]) for r in rows[1:]) > 1e-4
    assert not [p for p in multiprocessing.active_children() if p.name == "rlx-sampler"]  # closed with the fit


def test_lora_pushes_the_adapters_and_trains_one_version_behind(tmp_path, test_cache, monkeypatch):
    """peft=lora through the sampler process: the policy copy with its adapters pickles into the worker, the
    pushed versions (the trainable weights: the adapters; tests/rollout/test_async.py pins that frozen ones never
    travel) load into it, and the run trains on batches one version behind from step 1 on."""
    monkeypatch.setenv("RLX_CACHE", str(test_cache))
    cfg = compose_config(
        [
            *TINY_TASK,
            "peft=lora",
            "rollout.max_staleness=1",
            "algo.prompts_per_step=4",
            "algo.group_size=4",
            "trainer.max_steps=3",
            "trainer.val_check_interval=3",
            "~trainer.callbacks",
            "+trainer.enable_checkpointing=false",
        ],
        tmp_path / "run",
    )
    summary = train(cfg)
    with Path(summary["metrics_csv"]).open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert [float(r["rollout/staleness_max"]) for r in rows] == [0.0, 1.0, 1.0]
    assert all(float(r["time/weight_sync"]) >= 0 for r in rows)
