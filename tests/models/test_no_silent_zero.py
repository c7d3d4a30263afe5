"""No silent zero on user data: reward=math with strict=null extracts the answer on data=jsonl and
data=hf_dataset but stays strict on the embedded arithmetic; a GSM8K-style reference ("... #### 72") is read
the same way; and a run whose groups never differ in reward warns once."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
import torch

from rlx.checks import build_node
from rlx.data.arithmetic import ArithmeticTask
from rlx.data.jsonl import JsonlTask
from rlx.rewards.base import Status
from rlx.rewards.math import MathReward
from rlx.rewards.no_signal import NoSignalWarning, no_signal


def test_null_strictness_is_the_tasks(cfg_factory, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "Q: 8*9?", "answer": "#### 72"}) + "\n")
    cfg = cfg_factory("data=jsonl", f"data.train_file={rows}", f"data.val_file={rows}")
    reward = build_node(cfg, "reward")
    assert reward.strict is None  # conf/reward/math.yaml: the task decides
    reward.bind(build_node(cfg, "data"))
    assert reward.strict is False
    verdicts = reward(["8*9 = 72, so the answer is 72.", "I think 71", "Answer: 72"], [{"answer": "#### 72"}] * 3)
    assert [v.status for v in verdicts] == [Status.PASS, Status.FAIL, Status.PASS]

    default = build_node(cfg_factory(), "reward")
    default.bind(build_node(cfg_factory(), "data"))  # data=arithmetic: completions are the bare sum
    assert default.strict is True
    assert [v.status for v in default(["85", "85 ok"], [{"answer": "85"}] * 2)] == [Status.PASS, Status.FAIL]


def test_explicit_strictness_wins_and_unbound_null_refuses_to_score(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "Q", "answer": "5"}) + "\n")
    strict = MathReward(strict=True, verifier="exact", format_weight=0.0, timeout_s=5)
    strict.bind(JsonlTask(str(rows), str(rows), 8, None))
    assert strict.strict is True
    lenient = MathReward(strict=False, verifier="exact", format_weight=0.0, timeout_s=5)
    lenient.bind(ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None))
    assert lenient.strict is False
    by_class = MathReward(strict=None, verifier="exact", format_weight=0.0, timeout_s=5)
    by_class.bind(JsonlTask)  # rlx.score binds the composed task's class, not an instance
    assert by_class.strict is False
    with pytest.raises(RuntimeError, match="strict=None.*bind"):
        MathReward(strict=None, verifier="exact", format_weight=0.0, timeout_s=5)(["5"], [{"answer": "5"}])
    # a strict reference is compared as written, marker and all
    assert (
        MathReward(strict=True, verifier="exact", format_weight=0.0, timeout_s=5)(["72"], [{"answer": "#### 72"}])[
            0
        ].status
        == Status.FAIL
    )


def test_no_signal_rule():
    assert no_signal([1.0, 1.0, 1.0], 3)
    assert not no_signal([1.0, 0.75, 1.0], 3)
    assert not no_signal([1.0, 1.0], 3)  # too early to tell
    assert no_signal([1.0, 1.0, 1.0, 0.5], 3)  # the first steps decide


def fake_trainer(zero_std_frac: float):
    return SimpleNamespace(
        callback_metrics={"reward/zero_std_frac": torch.tensor(zero_std_frac), "reward/mean": torch.tensor(0.0)}
    )


def test_the_warning_fires_once_and_not_for_one_completion_per_prompt(caplog):
    strict = SimpleNamespace(strict=True)  # reward=math on the arithmetic task: the hint names reward.strict=false
    grpo = SimpleNamespace(algo=SimpleNamespace(group_size=8), reward=strict)
    ppo = SimpleNamespace(algo=SimpleNamespace(group_size=1), reward=strict)
    callback = NoSignalWarning(steps=2)
    with caplog.at_level(logging.WARNING, logger="rlx.rewards.no_signal"):
        for _ in range(5):
            callback.on_train_batch_end(fake_trainer(1.0), grpo, None, 0, 0)
    warnings = [r for r in caplog.records if "no learning signal" in r.message]
    assert len(warnings) == 1
    assert "first 2 RL steps" in warnings[0].message and "reward.strict=false" in warnings[0].message
    caplog.clear()
    learning = NoSignalWarning(steps=2)
    for frac in (1.0, 0.5, 1.0, 1.0):
        learning.on_train_batch_end(fake_trainer(frac), grpo, None, 0, 0)
    single = NoSignalWarning(steps=2)
    for _ in range(3):
        single.on_train_batch_end(fake_trainer(1.0), ppo, None, 0, 0)
    assert not [r for r in caplog.records if "no learning signal" in r.message]
    with pytest.raises(ValueError, match="steps must be >= 1"):
        NoSignalWarning(steps=0)
