"""Both `rollout` options through the real config and trainer, with generation in chunks: a few RL steps run,
time/generate, time/score, time/prepare and time/update are logged, and held-out evaluation decodes in chunks too."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hydra.utils import instantiate

from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate
from rlx.train import train
from tests.conftest import FAST_MODEL, compose_config


def test_both_rollout_options_compose_and_build(tmp_path):
    for option, cls in (("engine", RolloutEngine), ("hf", HFGenerate)):
        cfg = compose_config([f"rollout={option}", "rollout.overlap_scoring=false"], tmp_path)
        built = instantiate(cfg.rollout)
        assert type(built) is cls and built.overlap_scoring is False
    assert compose_config([], tmp_path).rollout._target_ == "rlx.rollout.engine.RolloutEngine"  # the default


@pytest.mark.slow
@pytest.mark.parametrize("option", ["engine", "hf"])
def test_training_with_chunked_generation_logs_generate_and_score_time(option, tmp_path, test_cache, monkeypatch):
    monkeypatch.setenv("RLX_CACHE", str(test_cache))
    run = tmp_path / option
    cfg = compose_config(
        [
            *FAST_MODEL,
            f"rollout={option}",
            "algo.generation_batch_size=8",
            "algo.group_size=4",
            "algo.prompts_per_step=4",
            "trainer.max_steps=2",
            "trainer.val_check_interval=2",
            "data.val_size=20",
            "~trainer.callbacks",
            "+trainer.enable_checkpointing=false",
        ],
        run,
    )
    summary = train(cfg)
    assert summary["steps"] == 2 and 0.0 <= summary["after"]["val/accuracy"] <= 1.0
    with Path(summary["metrics_csv"]).open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("time/generate")]
    assert len(rows) == 2
    for row in rows:
        assert float(row["time/generate"]) > 0 and float(row["time/score"]) >= 0
        assert float(row["rollout/seconds"]) >= float(row["time/generate"])
        assert float(row["time/prepare"]) > 0 and float(row["time/update"]) > 0  # the step's other two phases
