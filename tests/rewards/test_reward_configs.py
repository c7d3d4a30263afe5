"""Every reward and data option of this issue composes from the real config tree and instantiates."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from rlx.data.programs import ProgramsTask
from rlx.rewards.base import Status
from rlx.rewards.unit_tests import parse_tests

CONF = str(Path(__file__).resolve().parents[2] / "conf")


@pytest.mark.parametrize("overrides", [["reward=math"], ["reward=unit_tests", "data=programs"],
                                       ["reward=triton", "data=kernels"]])
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


def test_programs_rows_score_their_own_solution_and_not_the_teacher_flaw():
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["reward=unit_tests", "data=programs"])
    task: ProgramsTask = instantiate(cfg.data)
    reward = instantiate(cfg.reward)
    try:
        rows = task.val[:4]
        right = [f"def f(x): return {r['params'][0]}*x+{r['params'][1]}" for r in rows]
        flawed = [f"def f(x): return {r['params'][0]}*x" for r in rows if r["params"][1] != 0]
        verdicts = reward(right + flawed, rows + [r for r in rows if r["params"][1] != 0])
    finally:
        reward.close()
    assert all(v.status == Status.PASS for v in verdicts[:4])
    assert all(v.status == Status.FAIL for v in verdicts[4:])


def test_parse_tests_keeps_expected_values_out_of_the_call():
    assert parse_tests({"tests": ["assert f(1, [2]) == (3, 'a')"]}) == [("f(1, [2])", (3, "a"))]
    assert parse_tests({"entry_point": "g", "tests": [{"input": [1, "x"], "output": [2]}]}) == [("g(1, 'x')", [2])]
    with pytest.raises(ValueError, match="entry_point"):
        parse_tests({"tests": [{"input": [1], "output": 2}]})
