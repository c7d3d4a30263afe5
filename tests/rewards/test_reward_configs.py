"""Every reward and data option of this issue composes from the real config tree and instantiates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from rlx.checks import build_node
from rlx.data.programs import TEST_INPUTS, ProgramsTask, flawed_solution, solution, unclosed_solution
from rlx.errors import ConfigError
from rlx.rewards.base import Status
from rlx.rewards.unit_tests import parse_tests

CONF = str(Path(__file__).resolve().parents[2] / "conf")


@pytest.mark.parametrize(
    "overrides", [["reward=math"], ["reward=unit_tests", "data=programs"], ["reward=triton", "data=kernels"]]
)
def test_reward_and_data_instantiate(overrides):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    task = instantiate(cfg.data)
    reward = instantiate(cfg.reward)
    try:
        task.check_fields(tuple(reward.required_fields))
    finally:
        close = getattr(reward, "close", None)
        if close is not None:
            close()


def programs_task(**overrides) -> ProgramsTask:
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=["reward=unit_tests", "data=programs", *(f"data.{k}={v}" for k, v in overrides.items())],
        )
    return build_node(cfg, "data")  # what the CLI does: the constructor's complaint surfaces as a ConfigError


def test_programs_rows_score_their_own_solution_and_not_the_teacher_flaw():
    task = programs_task()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        reward = instantiate(compose(config_name="config", overrides=["reward=unit_tests"]).reward)
    hard = [r for r in task.val if r["difficulty"]][:4]  # a mul after an add or sub: the flaw matters
    easy = [r for r in task.val if not r["difficulty"]][:2]
    assert len(hard) == 4 and len(easy) == 2
    try:
        verdicts = reward(
            [solution(r["chain"]) for r in hard + easy]
            + [flawed_solution(r["chain"]) for r in hard + easy]
            + [unclosed_solution(r["chain"]) for r in hard]
            + ["def f(x): return 1//0"],
            hard + easy + hard + easy + hard + hard[:1],
        )
    finally:
        reward.close()
    right, flawed, unclosed, raises = verdicts[:6], verdicts[6:12], verdicts[12:16], verdicts[16]
    assert all(
        v.status == Status.PASS and v.components == {"pass_frac": 1.0, "valid": 1.0, "correct": 1.0} for v in right
    )
    assert all(v.status == Status.FAIL and v.reward < 1.0 for v in flawed[:4])  # "(x+3)*2" written "x+3*2"
    assert all(v.components["valid"] == 1.0 and v.components["correct"] == 0.0 for v in flawed[:4])
    assert all(v.status == Status.PASS for v in flawed[4:])  # no mul after an add: no parentheses to forget
    assert all(
        v.status == Status.FORMAT and v.components == {"pass_frac": 0.0, "valid": 0.0, "correct": 0.0} for v in unclosed
    )  # "(x+3*2": does not parse
    assert raises.status == Status.FAIL and raises.components == {"pass_frac": 0.0, "valid": 1.0, "correct": 0.0}


def test_programs_task_holds_out_specs_and_teaches_a_flawed_mode():
    task = programs_task()
    train, val = {r["prompt"] for r in task.train}, {r["prompt"] for r in task.val}
    assert len(val) == len(task.val) == 200 and len(train) == len(task.train) > 10_000 and not train & val
    assert task.val == programs_task().val  # fixed by split_seed, not by the run's seed
    row = next(r for r in task.train + task.val if r["chain"] == [["add", 3], ["mul", 2], ["sub", 4]])
    assert row["prompt"] == "# add 3, mul 2, sub 4\n" and solution(row["chain"]) == "def f(x): return (x+3)*2-4"
    assert flawed_solution(row["chain"]) == "def f(x): return x+3*2-4" and row["difficulty"] == 1
    assert [t["output"] for t in row["tests"]] == [(x + 3) * 2 - 4 for x in TEST_INPUTS]
    rows = {r["prompt"]: r for r in task.train}
    examples = task.warm_start_examples(2000, seed=0)
    assert all(p in rows for p, _ in examples)  # the teacher only sees training specs
    hard = [(rows[p], c) for p, c in examples if rows[p]["difficulty"]]
    assert all(c in (solution(r["chain"]), flawed_solution(r["chain"]), unclosed_solution(r["chain"])) for r, c in hard)
    unclosed = sum(c == unclosed_solution(r["chain"]) for r, c in hard) / len(hard)
    flawed = sum(c == flawed_solution(r["chain"]) for r, c in hard) / len(hard)
    assert abs(unclosed - task.teacher_error * task.teacher_unclosed) < 0.05
    assert abs(flawed - task.teacher_error * (1 - task.teacher_unclosed)) < 0.05
    assert task.teacher_error > 0.5  # erring more often than not: greedy imitation learns a bug
    assert all(c == solution(rows[p]["chain"]) for p, c in programs_task(teacher_error=0).warm_start_examples(200, 0))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("min_ops", 0, "1 <= min_ops <= max_ops <= 4"),
        ("max_ops", 5, "1 <= min_ops <= max_ops <= 4"),
        ("constant_max", 1, "data.constant_max must be in"),
        ("constant_max", 99, "more than the 500000 rows"),
        ("teacher_error", 1.5, "data.teacher_error"),
        ("teacher_unclosed", -0.1, "data.teacher_unclosed must be a probability (got -0.1)"),
        ("val_size", 0, "data.val_size must be in"),
        ("max_new_tokens", 20, "raise it to at least 27"),
    ],
)
def test_programs_bad_values_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        programs_task(**{key: value})


def test_parse_tests_keeps_expected_values_out_of_the_call():
    assert parse_tests({"tests": ["assert f(1, [2]) == (3, 'a')"]}) == [("f(1, [2])", (3, "a"))]
    assert parse_tests({"entry_point": "g", "tests": [{"input": [1, "x"], "output": [2]}]}) == [("g(1, 'x')", [2])]
    with pytest.raises(ValueError, match="entry_point"):
        parse_tests({"tests": [{"input": [1], "output": 2}]})
