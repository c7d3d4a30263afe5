"""reward=reasoning_gym (with data=reasoning_gym): a dataset's own score_answer, as reasoning-gym's own evaluation
calls it (extract_answer, then score_answer on the generated entry), with the traps of 0.1.25 handled: raising
scorers, scorers that eval() the answer, graded floors and a dataset that pays anything."""

from __future__ import annotations

import json

import pytest

from rlx.errors import ConfigError
from rlx.rewards.base import Status
from tests.conftest import run_cli
from tests.envs.fixtures_scripted import drive, extra, scripted

reasoning_gym = extra("reasoning_gym", "reasoning-gym")

from reasoning_gym.utils import extract_answer  # noqa: E402 (after the extra's check)

from rlx.data.reasoning_gym import SCORER, ReasoningGymTask  # noqa: E402
from rlx.envs.reasoning_gym import ReasoningGymRetryEnv  # noqa: E402
from rlx.rewards.reasoning_gym import ReasoningGymReward, safe_expression  # noqa: E402


def task(name: str, **config) -> ReasoningGymTask:
    return ReasoningGymTask(
        name=name, config=config, train_size=4, val_size=4, split_seed=7, system_prompt="default", chat=False,
        max_new_tokens=64, overlong_prompts="stop", reward_target=SCORER,
    )  # fmt: skip


def bound(t: ReasoningGymTask, partial_credit: bool = True) -> ReasoningGymReward:
    reward = ReasoningGymReward(partial_credit=partial_credit)
    reward.bind(t)
    return reward


def library_scores(t: ReasoningGymTask, completions: list[str]) -> list[float]:
    """reasoning-gym's own scoring of these completions: a freshly generated dataset, extract_answer, score_answer."""
    dataset = reasoning_gym.create_dataset(t.name, seed=7, size=8, **t.config)
    return [dataset.score_answer(extract_answer(c), dataset[4 + i]) for i, c in enumerate(completions)]


def test_leg_counting_scores_as_the_library_does():
    t = task("leg_counting")
    reward = bound(t)
    truth = t.train[0]["answer"]
    wrong = str(int(truth) + 1)
    completions = [f"Counting... <answer>{truth}</answer>", f"<answer>{wrong}</answer>", truth]  # last: no tags
    verdicts = reward(completions, t.train[:3])
    assert [v.reward for v in verdicts] == [1.0, 0.0, 0.0]
    assert [v.status for v in verdicts] == [Status.PASS, Status.FAIL, Status.FORMAT]
    assert [v.reward for v in verdicts] == library_scores(t, completions)
    assert t.train[0]["prompt"].startswith(reasoning_gym.utils.SYSTEM_PROMPTS["default"])


def test_graded_credit_and_floor_are_labelled():
    t = task("countdown")
    reward = bound(t)
    assert reward.guarded and reward.floor == pytest.approx(0.01)  # countdown pays 0.01 to any wrong answer
    # countdown's scorer: 1.0 right; 0.05 for an expression with the wrong numbers; 0.01 for anything else
    completions = [f"<answer>{t.train[0]['answer']}</answer>", "<answer>1 + 2</answer>", "<answer>no idea</answer>"]
    right, graded, floor = reward(completions, t.train[:3])
    assert (right.reward, right.status) == (1.0, Status.PASS)
    assert (graded.reward, graded.status, "floor" in graded.details) == (0.05, Status.FAIL, False)
    assert (floor.reward, floor.status, floor.details["floor"]) == (0.01, Status.FAIL, True)
    assert [v.reward for v in (right, graded, floor)] == library_scores(t, completions)
    [zeroed] = bound(t, partial_credit=False)(completions[1:2], t.train[1:2])
    assert (zeroed.reward, zeroed.components["partial"]) == (0.0, 0.0)


def test_spiral_matrix_list_answer_gets_its_partial_credit():
    t = task("spiral_matrix")
    entry = t.train[0]["entry"]
    as_list = "[" + ", ".join(entry["answer"].split()) + "]"  # the right numbers as a Python list: the scorer pays 0.1
    [verdict] = bound(t)([f"<answer>{as_list}</answer>"], t.train[:1])
    assert (verdict.reward, verdict.status, verdict.components["partial"]) == (0.1, Status.FAIL, 0.1)


def test_raising_scorer_is_a_labelled_zero():
    t = task("prime_factorization")
    [verdict] = bound(t)(["<answer>seven</answer>"], t.train[:1])
    assert (verdict.reward, verdict.status) == (0.0, Status.FORMAT)
    assert verdict.details["scorer_error"].startswith("ValueError")


def test_unsafe_answer_never_reaches_an_evaluating_scorer(monkeypatch):
    t = task("string_insertion")
    reward = bound(t)
    assert reward.guarded
    called = []
    monkeypatch.setattr(t.dataset, "score_answer", lambda answer, entry: called.append(answer) or 0.0)
    attack = "<answer>__import__('os').system('touch /tmp/pwned')</answer>"
    [verdict] = reward([attack], t.train[:1])
    assert (verdict.reward, verdict.status, called) == (0.0, Status.VIOLATION, [])
    reward(["<answer>['A', 'B']</answer>"], t.train[:1])
    assert called == ["['A', 'B']"]  # a literal list is what the scorer's eval is for


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("['A', 'B']", True), ("-34*x**8/15 - 5*x/4 + C", True), ("sin(x) + exp(2*x)", True), ("0x5b993", True),
        ("2x + 3", True),  # sympy's implicit product: not Python, no name to fear
        ("_ _ Q _", True),  # n_queens' board
        ("().__class__", False), ("__import__('os')", False), ("open('f').read()", False), ("x.y", False),
        ("[c for c in 'ab']", False), ("lambda: 0", False), ("eval('1')", False), ("f(x=1)", False),
        ("2 x.real", False),
    ],
)  # fmt: skip
def test_safe_expression(text, safe):
    assert safe_expression(text) is safe


def test_pay_anything_dataset_is_refused():
    with pytest.raises(ConfigError, match=r"data.name=game_of_life_halting: its score_answer pays 1.0 to a nonsense"):
        bound(task("game_of_life_halting"))


def test_scores_against_the_kept_entry():
    t = task("leg_counting")
    reward = bound(t)
    row = {**t.train[0], "entry": {**t.train[0]["entry"], "answer": "12345"}}  # as kept with the sample
    [verdict] = reward(["<answer>12345</answer>"], [row])
    assert verdict.status is Status.PASS


def test_bad_config_names_the_key():
    with pytest.raises(ConfigError, match=r"data.name='leg_countin' is not a reasoning-gym dataset"):
        task("leg_countin")
    with pytest.raises(ConfigError, match=r"data.config=\{'no_such_field': 1\} was refused"):
        task("leg_counting", no_such_field=1)
    with pytest.raises(ConfigError, match=r"add reward=reasoning_gym"):
        ReasoningGymTask("leg_counting", {}, 4, 4, 7, "default", False, 64, "stop", "rlx.rewards.math.MathReward")


@pytest.mark.slow
def test_trains_through_the_cli(tmp_path, test_cache):
    argv = [
        "-m", "rlx", "reward=reasoning_gym", "data.name=leg_counting", "data.train_size=8", "data.val_size=2",
        "data.max_new_tokens=8", "model.warm_start=null", "trainer.max_steps=1", "algo.prompts_per_step=2",
        "algo.group_size=2", f"run_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    proc = run_cli(argv, cwd=tmp_path, cache=test_cache, timeout=300, check=True)
    assert "implied: reward=reasoning_gym brings data=reasoning_gym" in proc.stdout + proc.stderr
    sample = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert sample["prompt"].startswith("Given a problem") and sample["reference"]["answer"].isdigit()


FEEDBACK = "\nYour answer {answer} scored {score:.2f}. Try again.\n"


def test_retry_env_turns_match_the_library_scores():
    t = task("leg_counting")
    env = ReasoningGymRetryEnv(bound(t), max_turns=3, feedback=FEEDBACK, observation_role=None)
    rows = t.train[:2]
    truth = rows[0]["answer"]
    policy = scripted("<answer>3</answer>", f"<answer>{truth}</answer>")
    episodes = drive(env, rows, policy)
    # row 0: 3 legs is wrong (0.0, feedback), then the truth (1.0, done); every turn of both rows equals
    # reasoning-gym's own extract_answer + score_answer of the same text
    first = episodes[0]
    assert [(v.verdict.reward, v.verdict.status, v.done) for v in first] == [
        (0.0, Status.FAIL, False),
        (1.0, Status.PASS, True),
    ]
    assert first[0].observation == "\nYour answer 3 scored 0.00. Try again.\n"
    dataset = t.dataset
    for row, turns in zip(rows, episodes, strict=True):
        texts = [policy([{"role": "assistant"}] * k) for k in range(len(turns))]
        assert [v.verdict.reward for v in turns] == [
            dataset.score_answer(extract_answer(x), row["entry"]) for x in texts
        ]


def test_retry_env_refuses_what_cannot_work():
    from rlx.rewards.math import MathReward

    with pytest.raises(ConfigError, match="add reward=reasoning_gym"):
        ReasoningGymRetryEnv(
            MathReward(strict=False, verifier="exact", format_weight=0.0, timeout_s=5), 2, FEEDBACK, None
        )
    reward = bound(task("leg_counting"))
    with pytest.raises(ConfigError, match=r"env.max_turns=1: .* needs env.max_turns >= 2"):
        ReasoningGymRetryEnv(reward, 1, FEEDBACK, None)
    with pytest.raises(ConfigError, match=r"env.feedback='{prompt}' names an unknown field"):
        ReasoningGymRetryEnv(reward, 2, "{prompt}", None)


@pytest.mark.slow
def test_retry_env_trains_through_the_cli(tmp_path, test_cache):
    argv = [
        "-m", "rlx", "reward=reasoning_gym", "data.name=leg_counting", "env=reasoning_gym", "env.max_turns=2",
        "data.train_size=8", "data.val_size=2", "data.max_new_tokens=8", "model.warm_start=null",
        "trainer.max_steps=1", "algo.prompts_per_step=2", "algo.group_size=2", "samples_every=1",
        f"run_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    run_cli(argv, cwd=tmp_path, cache=test_cache, timeout=300, check=True)
    episode = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])["episode"]
    # the untrained policy writes no <answer>: both turns score 0 and the feedback says so
    assert [t["reward"] for t in episode["turns"]] == [0.0, 0.0]
    assert episode["observations"][0].startswith("\nYour answer none scored 0.00. Try again")
