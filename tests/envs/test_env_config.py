"""The `env` group: the default is the one-turn episode of the run's reward, every choice builds from the real
config, and a bad value fails at start with one line naming the key and the fix."""

from __future__ import annotations

import pytest

from rlx.envs.arithmetic_retry import ArithmeticRetryEnv, hints
from rlx.envs.build import build_env
from rlx.envs.single import RewardEnv
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict
from rlx.rollout.engine import RolloutEngine

ENGINE = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)


class Exact:
    """PASS when the completion is the row's answer."""

    required_fields = ("answer",)

    def __call__(self, completions, rows):
        return [
            Verdict(1.0, Status.PASS) if c == r["answer"] else Verdict(0.0, Status.FAIL)
            for c, r in zip(completions, rows, strict=True)
        ]


def test_the_default_env_is_the_one_turn_episode_of_the_runs_reward(cfg_factory):
    reward = Exact()
    env, max_context = build_env(cfg_factory(), reward, ENGINE)
    assert isinstance(env, RewardEnv) and env.reward is reward and env.max_turns == 1 and max_context is None
    turns = env.step(env.reset([{"answer": "5"}, {"answer": "6"}]), ["5", "7"])
    assert [(t.verdict.reward, t.done) for t in turns] == [(1.0, True), (0.0, True)]
    assert env.required_fields == ("answer",)


def test_arithmetic_retry_builds_with_the_runs_reward_and_its_context_cap(cfg_factory):
    env, max_context = build_env(cfg_factory("env=arithmetic_retry", "env.max_context_tokens=64"), Exact(), ENGINE)
    assert isinstance(env, ArithmeticRetryEnv) and env.max_turns == 2 and max_context == 64
    states = env.reset([{"prompt": "17+15=", "answer": "32"}] * 3)
    turns = env.step(states, ["32", "22", "x"])
    assert [t.done for t in turns] == [True, False, False]
    assert [t.observation for t in turns[1:]] == [" low\n22+10=", " not a number\n17+15="]


def test_the_hints_of_a_wrong_answer():
    assert hints("17+15=", "22", "32") == {"prompt": "17+15=", "given": "22", "direction": "low", "retry": "22+10="}
    assert hints("17+15=", "42", "32")["direction"] == "high" and hints("17+15=", "42", "32")["retry"] == "17+15="


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.max_turns=2"], "env.max_turns=2: env=single is the one-turn episode"),
        (["env=arithmetic_retry", "env.max_turns=1"], "arithmetic_retry gives a wrong answer another try"),
        (["env=arithmetic_retry", "env.feedback='{answer}'"], "env.feedback='{answer}' names an unknown field"),
        (["env=arithmetic_retry", "env.max_context_tokens=0"], "env.max_context_tokens=0 must be a positive"),
        (["env=arithmetic_retry", "env.max_context_tokens=lots"], "env.max_context_tokens='lots'"),
        (["env=arithmetic_retry"], "rollout.max_staleness=1 samples ahead in another process one turn"),
    ],
)
def test_a_bad_env_value_fails_at_start_naming_the_key(cfg_factory, overrides, message):
    staleness = 1 if "max_staleness" in message else 0
    with pytest.raises(ConfigError) as err:
        build_env(cfg_factory(*overrides), Exact(), RolloutEngine(False, True, True, max_staleness=staleness))
    assert message in str(err.value) and "\n" not in str(err.value)
