"""data=multi_sum: the teacher's two answer styles (hand-computed), the splits, and how reward=math scores them."""

from __future__ import annotations

import random

import pytest

from rlx.data.multi_sum import MultiSumTask, column_sum_without_carries, has_carry, scratchpad
from rlx.rewards.base import Status
from rlx.rewards.math import MathReward


def task(**kw) -> MultiSumTask:
    args = {"operand_counts": [2, 3, 4], "low": 10, "high": 99, "train_size": 300, "val_size": 50, "split_seed": 1234,
                "teacher_scratchpad": 0.3, "teacher_carry_drop": 0.7, "max_new_tokens": 24, "reward_strict": False}
    return MultiSumTask(**{**args, **kw})


def test_answers_by_hand():
    # 47+38+25: units 7+8+5 = 20 → 0 without the carry of 2, tens 4+3+2 = 9 → "90"; the true sum is 110
    assert column_sum_without_carries([47, 38, 25]) == 90 and sum([47, 38, 25]) == 110
    assert column_sum_without_carries([47, 38]) == 75  # as rlx.data.arithmetic.carry_dropped_sum: 85 → 75
    assert column_sum_without_carries([12, 31]) == 43  # no carry: the teacher's slip changes nothing
    assert has_carry([47, 38]) and not has_carry([12, 31])
    assert scratchpad([47, 38, 25]) == "[85+25=110]110"
    assert scratchpad([57, 46, 80, 68]) == "[103+80=183+68=251]251"
    assert scratchpad([76, 24]) == "[100]100"
    assert len(scratchpad([99, 99, 99, 99])) + 1 == 23  # the longest answer and its eos fit max_new_tokens=24


def test_splits_are_disjoint_balanced_and_fixed_by_split_seed():
    t = task()
    assert len(t.train) == 3 * 300 and len(t.val) == 3 * 50
    assert not {r["prompt"] for r in t.train} & {r["prompt"] for r in t.val}
    assert sorted({r["difficulty"] for r in t.val}) == [0, 1, 2]
    assert all(len(r["operands"]) == r["difficulty"] + 2 and r["answer"] == str(sum(r["operands"])) for r in t.val)
    assert [r["prompt"] for r in task().val] == [r["prompt"] for r in t.val]
    assert [r["prompt"] for r in task(split_seed=1).val] != [r["prompt"] for r in t.val]


def test_teacher_rates_and_corpus_stays_in_the_training_split():
    t = task()
    examples = t.warm_start_examples(4000, seed=0)
    train = {r["prompt"]: r for r in t.train}
    assert all(p in train for p, _ in examples)
    pads = [c for _, c in examples if c.startswith("[")]
    assert abs(len(pads) / len(examples) - 0.3) < 0.03
    assert all(c == scratchpad(train[p]["operands"]) for p, c in examples if c.startswith("["))  # always right
    direct = [(train[p], c) for p, c in examples if not c.startswith("[") and train[p]["carry"]]
    dropped = sum(c == str(column_sum_without_carries(r["operands"])) for r, c in direct) / len(direct)
    assert abs(dropped - 0.7) < 0.04  # forgets the carries 70% of the time where there is one


def test_reward_math_scores_both_styles_by_the_last_number():
    reward = MathReward(strict=False)
    row = {"answer": "110"}
    verdicts = reward(["110", "[85+25=110]110", "[85+25=110]90", "90", ""], [row] * 5)
    assert [v.status for v in verdicts] == [Status.PASS, Status.PASS, Status.FAIL, Status.FAIL, Status.FORMAT]


def test_bad_settings_fail_with_the_key():
    with pytest.raises(ValueError, match="reward.strict=false"):
        task(reward_strict=True)
    with pytest.raises(ValueError, match="data.operand_counts"):
        task(operand_counts=[5])
    with pytest.raises(ValueError, match="data.max_new_tokens=10"):
        task(max_new_tokens=10)
    with pytest.raises(ValueError, match="more than half"):
        task(operand_counts=[2], train_size=4000, val_size=100)


def test_the_config_composes_and_refuses_a_strict_reward(cfg_factory):
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    cfg = cfg_factory("data=multi_sum", "reward.strict=false")
    built = instantiate(cfg.data, _convert_="all")
    assert len(built.val) == 600 and built.max_new_tokens == 24
    random.Random(0).choice(built.train)
    with pytest.raises(InstantiationException, match="reward.strict=false"):
        instantiate(cfg_factory("data=multi_sum", "reward.strict=true").data, _convert_="all")
