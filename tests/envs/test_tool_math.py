"""env=tool_math as conf/env/tool_math.yaml builds it over conf/reward/math.yaml: the calculator's values (hand
computed) and refusals, the call syntax, scripted episodes (a tool call, its result, then the answer: per-turn
rewards, done flags, observation text), python in the sandbox, and hostile calls that end as error observations."""

from __future__ import annotations

import csv
import json

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rlx.envs.build import build_env
from rlx.envs.protocol import Environment
from rlx.envs.tool_math import ToolMathEnv, calculate, tool_call
from rlx.errors import ConfigError
from rlx.rewards.base import Status
from rlx.rollout.engine import RolloutEngine
from tests import conftest as harness
from tests.conftest import CONF, REPO
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET

BASE_UID = 63400 + RUN_UID_OFFSET
ENGINE = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)  # synchronous: max_staleness 0
ROW = {"prompt": "What is 2*(3+4)**2 + sum(range(101))?", "answer": "5148"}  # 98 + 5050


class ExtractingTask:
    strict_answers = False  # free text: reward=math extracts \boxed{} / Answer: (data=jsonl's rule)


def build(**env_overrides):
    """conf/env/tool_math.yaml built as rlx.train builds it: the `_partial_` env given the run's reward (here
    conf/reward/math.yaml's, strict=null bound to the task as the trainer's preflight binds it)."""
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/tool_math.yaml", "reward/math.yaml"))
    env.pop("defaults")
    env.python.base_uid = BASE_UID
    built = instantiate(reward)
    built.bind(ExtractingTask())
    return build_env(OmegaConf.create({"env": OmegaConf.merge(env, env_overrides)}), built, ENGINE)[0]


@pytest.fixture(scope="module")
def env():
    built = build()
    yield built
    built.close()


@pytest.mark.parametrize(
    "expression, value",
    [
        ("2*(3+4)**2", "98"),  # 2 * 49
        ("7/2", "3.5"),
        ("-7 // 2", "-4"),  # floor division rounds down
        ("2**100", "1267650600228229401496703205376"),  # exact, not 1.2676506002282294e+30
        ("sqrt(16) + factorial(5)", "124"),  # 4.0 + 120 = 124.0, shown in 15 significant digits
        ("round(pi, 3)", "3.142"),
        ("max(3, -4, 2) % 2", "1"),
        ("1/3", "0.333333333333333"),
        ("10 - 2 - 3", "5"),  # left to right
        ("2 ** 3 ** 2", "512"),  # right to left: 2 ** 9
    ],
)
def test_calculator_values(expression, value):
    assert calculate(expression) == value


@pytest.mark.parametrize(
    "expression, error",
    [
        ("9**9**9", "Error: calc: the result would have more than 10000 bits"),
        ("(10**3000) * (10**3000)", "Error: calc: the result would have more than 10000 bits"),
        ("__import__('os').system('ls')", "is not arithmetic"),
        ("x + 1", "'x' is not arithmetic"),
        ("(1).__class__", "is not arithmetic"),
        ("2 ^ 3", "Error: calc: operator BitXor is not supported (use ** for powers)"),
        ("1/0", "Error: ZeroDivisionError: division by zero"),
        ("10.0 ** 400", "Error: OverflowError"),
        ("sqrt(-1)", "Error: ValueError: math domain error"),
        ("(-8) ** 0.5", "Error: the result is not a real number (complex)"),
        ("factorial(5000)", "Error: calc: factorial takes an integer in [0, 1000]"),
        ("round(10**300, -10**9)", "Error: calc: round's digits must be an integer in [-100, 100]"),
        ("max()", "Error: TypeError"),
        ("sqrt(x=4)", "Error: calc: sqrt() takes no keyword arguments"),
        ("(" * 400 + "1" + ")" * 400, "Error: the expression does not parse (too many nested parentheses)"),
        ("-" * 999 + "1", "Error: the expression is too deeply nested"),  # 999 nested negations: RecursionError
        ("1" * 2000, "Error: the expression is longer than 1000 characters"),
        ("(2", "Error: the expression does not parse ('(' was never closed)"),
        ("'a' * 10**9", "is not arithmetic"),
    ],
)
def test_calculator_refuses_with_a_message(expression, error):
    assert error in calculate(expression)


@pytest.mark.parametrize(
    "completion, call",
    [
        ("Let me compute. <tool>calc: 2*(3+4)</tool>", ("calc", "2*(3+4)")),
        ("<tool>python: print(1)\nprint(2)", ("python", "print(1)\nprint(2)")),  # the stop string cut before </tool>
        ("<tool> calc :1+1</tool> <tool>python: x</tool>", ("calc", "1+1")),  # one call per turn: the first
        ("<tool>: 1</tool>", ("", "1")),
        ("The answer is \\boxed{98}", None),
    ],
)
def test_tool_call_syntax(completion, call):
    assert tool_call(completion) == call


def test_calculator_then_answer(env):
    assert isinstance(env, Environment) and env.stop == ("</tool>",) and env.max_turns == 4
    assert env.required_fields == ("answer",)
    states = env.reset([ROW, ROW])
    first = env.step(states, ["<tool>calc: 2*(3+4)**2</tool>", "<tool>python: print(sum(range(101)))</tool>"])
    assert [(t.verdict.status, t.verdict.reward, t.done) for t in first] == [(Status.FAIL, 0.0, False)] * 2
    assert [t.observation for t in first] == ["\n<result>\n98\n</result>\n", "\n<result>\n5050\n</result>\n"]
    assert first[1].verdict.details == {
        "tool": "python",
        "call": "print(sum(range(101)))",
        "result": "5050",
        "reason": "a tool call: no answer yet",
    }
    second = env.step(states, ["So 98 + 5050. Answer: 5148", "\\boxed{5147}"])
    assert [(t.verdict.status, t.verdict.reward, t.done, t.observation) for t in second] == [
        (Status.PASS, 1.0, True, None),
        (Status.FAIL, 0.0, True, None),
    ]
    assert [s.turns for s in states] == [2, 2]


HOSTILE = {
    "loops": ("<tool>python: while True: pass</tool>", "Error: the program was stopped (TIMEOUT): it ran past 2 s"),
    "floods": ("<tool>python: print('a' * 10**6)</tool>", "Error: the program was stopped (VIOLATION)"),
    "exits": ("<tool>python: import os; os._exit(1)</tool>", "SystemExit: 1"),
    "reads_host_files": ("<tool>python: print(open('/etc/passwd').read())</tool>", "FileNotFoundError"),
    "raises": ("<tool>python: 1/0</tool>", "ZeroDivisionError: division by zero"),
    "syntax": ("<tool>python: def (</tool>", "SyntaxError"),
    "silent": ("<tool>python: x = 5</tool>", "(no output: print the value you need)"),
    "control_characters": ("<tool>python: print('a\\x00b\\x1b[2Jc')</tool>", "a\\x00b\\x1b[2Jc"),  # escaped
    "unknown_tool": ("<tool>shell: rm -rf /</tool>", "Error: unknown tool 'shell': call one of calc, python"),
    "calc_attack": ("<tool>calc: ().__class__.__bases__[0]</tool>", "is not arithmetic"),
}


def test_hostile_calls_are_error_observations(env):
    turns = env.step(env.reset([ROW] * len(HOSTILE)), [text for text, _ in HOSTILE.values()])
    for (name, (_, said)), turn in zip(HOSTILE.items(), turns, strict=True):
        assert (turn.verdict.status, turn.verdict.reward, turn.done) == (Status.FAIL, 0.0, False), name
        assert said in turn.observation, (name, turn.observation)
        assert len(turn.observation) <= 400, name


def test_calc_only_builds_no_sandbox_and_refuses_python():
    env = build(tools=["calc"], observation_role="tool", max_observation_chars=64)
    try:
        assert env.sandbox is None
        turns = env.step(env.reset([ROW, ROW]), ["<tool>python: print(1)</tool>", "<tool>calc: 2**200</tool>"])
    finally:
        env.close()
    # 71 characters cut to the cap of 64; 2**200's 61 digits fit whole
    message = "Error: unknown tool 'python': call one of calc as <tool>name: ...</tool>"
    assert turns[0].observation == [{"role": "tool", "content": message[:58] + " [...]"}]
    assert turns[1].observation == [{"role": "tool", "content": str(2**200)}]


def test_text_results_keep_their_closing_tag():
    env = build(tools=["calc"], max_observation_chars=64)
    try:
        [turn] = env.step(env.reset([ROW]), ["<tool>calc: 2**300</tool>"])
    finally:
        env.close()
    # 64 - 21 characters of tags leave 43 for the 91-digit result: 37 digits and the cut mark
    assert turn.observation == f"\n<result>\n{str(2**300)[:37]} [...]\n</result>\n"
    assert len(turn.observation) == 64


@pytest.mark.parametrize(
    "override, message",
    [
        ({"max_turns": 0}, "env.max_turns must be an int >= 1"),
        ({"tools": ["calc", "bash"]}, "env.tools must be a non-empty list from \\['calc', 'python'\\]"),
        ({"tools": []}, "env.tools must be a non-empty list"),
        ({"python": {"timeout_s": 0}}, "env.python.timeout_s must be > 0"),
        ({"observation_role": "system"}, "env.observation_role must be null"),
        ({"python": {"limits": {"wall": 3}}}, "env.python.limits: .*'wall' \\(its keys: wall_s, cpu_s"),
    ],
)
def test_bad_keys_name_the_key_and_the_fix(override, message):
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/tool_math.yaml", "reward/math.yaml"))
    env.pop("defaults")
    with pytest.raises(ConfigError, match=message):
        build_env(OmegaConf.create({"env": OmegaConf.merge(env, override)}), instantiate(reward), ENGINE)


def test_class_is_the_yaml_target():
    assert OmegaConf.load(CONF / "env" / "tool_math.yaml")._target_ == f"{ToolMathEnv.__module__}.ToolMathEnv"


def write_task(folder):
    """Six A+B= rows and a warm-start file teaching both turns: the call, then the answer after its result."""
    rows = [{"prompt": f"{a}+{a + 1}=", "answer": str(2 * a + 1)} for a in range(1, 7)]
    warm = []
    for row in rows:
        call = f"<tool>calc: {row['prompt'][:-1]}</tool>"
        warm.append({"prompt": row["prompt"], "completion": call})
        after = f"{row['prompt']}{call}\n<result>\n{row['answer']}\n</result>\n"
        warm.append({"prompt": after, "completion": f"Answer: {row['answer']}"})
    for name, lines in (("rows.jsonl", rows), ("warm.jsonl", warm)):
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.slow  # a 60-step warm start, then 2 steps: ~45 s of CPU, 4 min wall on the shared machine (load 8)
def test_cli_run_calls_the_calculator_then_answers(tmp_path, test_cache):
    """`python -m rlx env=tool_math data=jsonl` on the embedded model, warm-started on the two turns (the model
    knows the syntax; nothing in the prompt teaches it): episodes call calc, get its result, answer."""
    write_task(tmp_path)
    rows = tmp_path / "rows.jsonl"
    data = [f"data.train_file={rows}", f"data.val_file={rows}", f"data.warm_start_file={tmp_path / 'warm.jsonl'}"]
    warm = ["model.warm_start.steps=60", "model.warm_start.warmup_steps=5", "model.warm_start.corpus_size=500"]
    steps = ["trainer.max_steps=2", "algo.prompts_per_step=2", "algo.group_size=2", "algo.temperature=0.3"]
    run = tmp_path / "run"
    argv = ["-m", "rlx", f"hydra.run.dir={run}", "env=tool_math", "data=jsonl", "data.max_new_tokens=24"]
    warm.append("model.warm_start.max_attempts=1")
    harness.run_cli([*argv, *data, *warm, *steps, "samples_every=1"], REPO, test_cache, check=True)
    episodes = [json.loads(line)["episode"] for line in (run / "samples.jsonl").read_text().splitlines()]
    assert len(episodes) == 8
    for episode in episodes:
        turns, observations = episode["turns"], episode["observations"]
        assert 1 <= len(turns) <= 4 and len(observations) == len(turns) - 1
        assert all(t["reward"] == 0.0 and t["status"] == "FAIL" for t in turns[:-1])  # tool calls: no answer yet
        assert all(o.startswith("\n<result>\n") and o.endswith("\n</result>\n") for o in observations)
    called = [e for e in episodes if e["turns"][0]["text"].startswith("<tool>calc:")]
    assert called and all(e["turns"][0]["text"].endswith("</tool>") for e in called)  # the stop string ends it
    with (run / "metrics.csv").open() as handle:
        metrics = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(metrics) == 2 and max(float(r["rollout/obs_token_frac"]) for r in metrics) > 0.0
