"""env=reasoning_gym: a reasoning-gym question with more tries. A turn that does not earn the full score gets
feedback (its score, and the instruction to try again) and the model answers again, up to env.max_turns; a full
score ends the episode.

    python -m rlx reward=reasoning_gym data.name=basic_arithmetic env=reasoning_gym env.max_turns=3

Every turn is scored as a single-turn run scores it: by reward=reasoning_gym (the dataset's own score_answer on
the row's kept entry, with its guards), passed in by rlx.envs.build (`_partial_: true`). A VIOLATION or INFRA
turn ends the episode too: the one is not the model's to retry, the other is not the model's fault.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlx.envs.protocol import Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status
from rlx.rewards.reasoning_gym import ReasoningGymReward

ENDS = (Status.PASS, Status.VIOLATION, Status.INFRA)
FIELDS = ("score", "answer")  # what `feedback` may name


@dataclass
class Question:
    row: dict


class ReasoningGymRetryEnv:
    """Args: reward: the run's reward (reward=reasoning_gym, bound to data=reasoning_gym's task); max_turns: answers
    per episode (>= 2: env=single is the one-try episode); feedback: a format string over {score} (the turn's, 2
    decimals) and {answer} (the extracted answer, or "none" without <answer> tags); observation_role: null for
    raw text after the turn, or the chat role (user) of a message."""

    def __init__(self, reward: Reward, max_turns: int, feedback: str, observation_role: str | None) -> None:
        if not isinstance(reward, ReasoningGymReward):
            raise ConfigError(
                f"env=reasoning_gym retries reasoning-gym questions scored by their own score_answer, not by "
                f"{type(reward).__name__}: add reward=reasoning_gym data.name=<dataset>"
            )
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 2:
            raise ConfigError(
                f"env.max_turns={max_turns!r}: env=reasoning_gym gives a wrong answer another try, so it needs "
                "env.max_turns >= 2 (env=single is the one-try episode)"
            )
        try:
            feedback.format(score=0.0, answer="")
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(
                f"env.feedback={feedback!r} names an unknown field ({err}): it may use {{score}} and {{answer}} "
                "(write {{ and }} for literal braces)"
            ) from None
        self.reward, self.max_turns, self.feedback = reward, max_turns, feedback
        self.observation_role = observation_role
        self.required_fields = ("prompt", *reward.required_fields)

    def reset(self, rows: list[dict]) -> list[Question]:
        return [Question(row) for row in rows]

    def step(self, states: list[Question], completions: list[str]) -> list[Turn]:
        verdicts = self.reward(completions, [state.row for state in states])
        turns = []
        for verdict in verdicts:
            answer = verdict.details.get("answer")
            text = self.feedback.format(score=verdict.reward, answer="none" if answer is None else answer)
            observation = [{"role": self.observation_role, "content": text}] if self.observation_role else text
            turns.append(Turn(verdict, done=verdict.status in ENDS, observation=observation))
        return turns

    def close(self) -> None:
        """The reward is the run's: rlx.train closes it."""
