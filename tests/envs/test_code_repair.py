"""env=code_repair as conf/env/code_repair.yaml builds it (with conf/reward/unit_tests.yaml as the run's reward):
scripted episodes (a wrong program, then the fix) with each turn's reward, done flag and observation text;
hostile programs give a bounded observation, never an exception; the expected values never reach the model."""

from __future__ import annotations

import csv
import json

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rlx.data.programs import ProgramsTask
from rlx.envs.build import build_env
from rlx.envs.code_repair import CodeRepairEnv, called
from rlx.envs.protocol import Environment
from rlx.errors import ConfigError
from rlx.rewards.base import Status
from rlx.rollout.engine import RolloutEngine
from tests import conftest as harness
from tests.conftest import CONF, FAST_MODEL, REPO
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET

BASE_UID = 63000 + RUN_UID_OFFSET
ENGINE = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)  # synchronous: max_staleness 0


def build(**env_overrides):
    """conf/env/code_repair.yaml built as rlx.train builds it (rlx.envs.build: the `_partial_` env given the
    run's reward, here conf/reward/unit_tests.yaml's)."""
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/code_repair.yaml", "reward/unit_tests.yaml"))
    env.pop("defaults"), reward.pop("defaults")
    reward.base_uid = BASE_UID
    built = instantiate(reward)
    try:
        return build_env(OmegaConf.create({"env": OmegaConf.merge(env, env_overrides)}), built, ENGINE)[0]
    except BaseException:
        built.close()
        raise


# data=programs' row "# sub 9, mul 8, mul 7": f(x) = (x-9)*8*7, tested on x in (-3, 0, 4, 7, 10)
PROGRAMS = ProgramsTask(1, 3, 9, 10, 1234, 0.8, 0.5, 28, 0.6, None)
ROW = next(r for r in PROGRAMS.train + PROGRAMS.val if r["prompt"] == "# sub 9, mul 8, mul 7\n")
EXPECTED = ["-672", "-504", "-280", "-112", "56"]  # (x-9)*56 at x = -3, 0, 4, 7, 10
RIGHT = "def f(x): return (x-9)*8*7"
FLAWED = "def f(x): return x-9*8*7"  # the teacher's dropped parentheses: x - 504, right only at x = 0
HUMANEVAL = {
    "prompt": 'def add(a, b):\n    """a + b"""\n',
    "test": (
        "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-9\n"
    ),
    "entry_point": "add",
    "code_from": "prompt_completion",
    "scoring": "all",
}
STOPS = {  # the first assert raises outside its comparison: check() stops there, as in Python
    "prompt": "def add(a, b):\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) + 1 == 4\n    assert candidate(2, 2) == 4\n",
    "entry_point": "add",
    "code_from": "prompt_completion",
}
STDIO = {"tests": [{"stdin": "3\n", "stdout": "6\n"}, {"stdin": "5\n", "stdout": "10\n"}]}


@pytest.fixture(scope="module")
def env():
    built = build()
    yield built
    built.reward.close()  # the run's reward: rlx.train closes it


def test_yaml_builds_an_environment_on_the_runs_reward(env):
    assert isinstance(env, Environment)
    assert (env.max_turns, env.max_observation_chars, env.max_failures) == (3, 600, 3)
    assert env.required_fields == ()  # reward=unit_tests checks each row's tests itself (row_problem)


def test_wrong_program_then_its_fix(env):
    states = env.reset([ROW, ROW])
    first = env.step(states, [FLAWED, "def f(x): return (x-9*8*7"])
    # FLAWED passes only f(0) (-504 either way): scoring=fraction gives 1/5
    assert [t.verdict.status for t in first] == [Status.FAIL, Status.FORMAT]
    assert [t.verdict.reward for t in first] == [0.2, 0.0]
    assert [t.done for t in first] == [False, False]
    assert first[0].observation == (
        "\n4 of 5 tests failed.\nf(-3) returned -507\nf(4) returned -500\nf(7) returned -497\n"
        "(1 more failing tests not shown)\nFix the program.\n"
    )
    assert first[1].observation.startswith("\nThe program did not run (FORMAT): loading the code raised SyntaxError")
    assert first[1].observation.endswith("Fix the program.\n")
    second = env.step(states, [RIGHT, RIGHT])
    assert [(t.verdict.status, t.verdict.reward, t.done, t.observation) for t in second] == [
        (Status.PASS, 1.0, True, None)
    ] * 2
    assert [s.turns for s in states] == [2, 2]


def test_expected_values_never_shown(env):
    turns = env.step(env.reset([ROW] * 2 + [HUMANEVAL]), ["def f(x): return 0", FLAWED, "    return a - b\n"])
    for turn in turns[:2]:
        assert not any(value in turn.observation for value in EXPECTED[:1] + EXPECTED[2:]), turn.observation
    # HumanEval's check(candidate): shown under the entry point, without `== 3` or the 0.75 of the comparison
    assert turns[2].verdict.status == Status.FAIL
    assert "add(1, 2) returned -1" in turns[2].observation
    assert "add(0.5, 0.25)" in turns[2].observation
    assert "0.75" not in turns[2].observation and "== 3" not in turns[2].observation


def test_tests_after_the_program_stopped_are_counted(env):
    [turn] = env.step(env.reset([STOPS]), ["    return None\n"])
    assert turn.observation == (
        "\n2 of 2 tests failed.\nadd(1, 2) raised TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'"
        "\n(1 tests not run: the test program stopped earlier)\nFix the program.\n"
    )


def test_stdio_cases_show_their_input_and_output(env):
    [turn] = env.step(env.reset([STDIO]), ["print(int(input()) + 1)"])
    assert turn.verdict.status == Status.FAIL
    assert turn.observation == (
        "\n2 of 2 tests failed.\ncase 1 (stdin 3\\n) printed 4\\n\ncase 2 (stdin 5\\n) printed 6\\n\nFix the program.\n"
    )  # what it printed, never the expected 6 and 10


HOSTILE = {
    "hangs": ("def f(x):\n    while True: pass", Status.TIMEOUT, "did not finish in time"),
    "exits": ("import os\nos._exit(3)", Status.CRASH, "exited (code 3)"),
    "long_error": ("def f(x): raise ValueError('x' * 100000)", Status.FAIL, "raised ValueError: xxx"),
    "floods_output": ("print('y' * 10**7)\ndef f(x): return x", Status.FAIL, "f(-3) returned -3"),  # its own stdout
    "returns_nul_bytes": (
        "def f(x): return chr(0) * 5000",
        Status.FAIL,
        "f(-3) returned '\\x00\\x00",
    ),  # got: the value's repr
    "nul_in_code": ("def f(x): return 1\x00", Status.FORMAT, "null bytes"),
    "empty": ("", Status.FAIL, "f(-3) raised NameError: name 'f' is not defined"),
    "not_code": ("<|endoftext|> ))) ((( \\", Status.FORMAT, "SyntaxError"),
}


def test_hostile_programs_get_a_bounded_observation(env):
    turns = env.step(env.reset([ROW] * len(HOSTILE)), [code for code, _, _ in HOSTILE.values()])
    for (name, (_, status, said)), turn in zip(HOSTILE.items(), turns, strict=True):
        assert (turn.verdict.status, turn.done) == (status, False), (name, turn.verdict.details)
        assert said in turn.observation, (name, turn.observation)
        assert len(turn.observation) <= 600 and turn.observation.endswith("Fix the program.\n")


def test_chat_role_observation_and_no_calls():
    env = build(observation_role="user", show_calls=False, max_failures=1, instruction="Try again.")
    try:
        [turn] = env.step(env.reset([ROW]), [FLAWED])
    finally:
        env.reward.close()
    assert turn.observation == [
        {
            "role": "user",
            "content": "4 of 5 tests failed.\ntest 1 returned -507\n(3 more failing tests not shown)\nTry again.",
        }
    ]


@pytest.mark.parametrize(
    "override, message",
    [
        ({"max_turns": 0}, "env.max_turns must be an int >= 1"),
        ({"max_observation_chars": 10}, "env.max_observation_chars must be an int >= 64"),
        ({"observation_role": "bot"}, "env.observation_role must be null"),
        ({"max_failures": 0}, "env.max_failures must be an int >= 1"),
        ({}, "env=code_repair scores with reward=unit_tests \\(got MathReward\\): set reward=unit_tests"),
    ],
)
def test_bad_keys_name_the_key_and_the_fix(override, message):
    """Checked before the env uses its reward: reward=math (no sandbox) reaches each check, the last refuses it."""
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/code_repair.yaml", "reward/math.yaml"))
    env.pop("defaults")
    with pytest.raises(ConfigError, match=message):
        build_env(OmegaConf.create({"env": OmegaConf.merge(env, override)}), instantiate(reward), ENGINE)


@pytest.mark.parametrize(
    "label, shown",
    [
        ("assert f(-3) == -672", "f(-3)"),
        ("assert abs(candidate(0.5, 0.25) - 0.75) < 1e-9", "add(0.5, 0.25)"),
        ("assert candidate([1, 2], key=3) == [2, 1]", "add([1, 2], key=3)"),
        ("assert 3 == 4", None),  # nothing of the function under test: no call is shown
        ("assert f(", None),  # does not parse
    ],
)
def test_only_the_call_of_the_tested_function_is_shown(label, shown):
    assert called(label, {"candidate", "f", "add"}, "add" if "candidate" in label else "f") == shown


def test_class_is_the_yaml_target():
    assert OmegaConf.load(CONF / "env" / "code_repair.yaml")._target_ == f"{CodeRepairEnv.__module__}.CodeRepairEnv"


@pytest.mark.slow  # ~30 s of CPU: 2:50 wall on the shared 2-core machine (load 7)
def test_cli_run_shows_observations_and_per_turn_rewards(tmp_path, test_cache):
    """`python -m rlx env=code_repair` (reward=unit_tests, data=programs) on the embedded model: every episode's
    record in samples.jsonl holds its turns (reward, status) and the observations between them."""
    run = tmp_path / "run"
    steps = ["trainer.max_steps=2", "algo.prompts_per_step=2", "algo.group_size=2", "data.val_size=4"]
    argv = ["-m", "rlx", f"hydra.run.dir={run}", "env=code_repair", *FAST_MODEL, *steps, "samples_every=1"]
    harness.run_cli(argv, REPO, test_cache, check=True)
    episodes = [json.loads(line)["episode"] for line in (run / "samples.jsonl").read_text().splitlines()]
    assert len(episodes) == 8  # samples_per_step=4 on each of the 2 steps
    for episode in episodes:
        turns, observations = episode["turns"], episode["observations"]
        assert 1 <= len(turns) <= 3 and len(observations) == len(turns) - 1
        assert all(0.0 <= t["reward"] <= 1.0 for t in turns)
        assert all(t["status"] != "PASS" for t in turns[:-1])  # a PASS ends the episode
        assert all(o.startswith("\n") and o.endswith("\nFix the program.\n") and len(o) <= 600 for o in observations)
        assert episode["end"] == ("done" if turns[-1]["status"] == "PASS" else "max_turns")
    with (run / "metrics.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(rows) == 2 and all(r["rollout/turns_mean"] and r["reward/turn_1_mean"] for r in rows)
