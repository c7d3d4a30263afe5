"""What the built-in environments share: an episode that scores every turn with the run's reward and shows the
model what went wrong (env=code_repair, env=kernel_refine), and the bounded observation each one sends.

`FeedbackEnv.step` scores the whole turn in one reward call (the reward's sandbox pool runs the episodes in
flight together), ends an episode where its `done` says so (a PASS; an INFRA verdict, which is the scorer's
failure, never the model's, and so has nothing to show it), and otherwise turns the verdict into what a user of
the reward would read (`describe`), cut to `max_observation_chars`. The per-turn reward is that turn's verdict;
the episode's outcome is its last turn's (the turn loop's rule, rlx.envs.trajectory).

The reward is the run's (conf/reward/, passed by rlx.train: the env yaml is `_partial_: true`), so the rows are
checked, the reward is bound to the task and closed once, by the trainer, as for env=single.

An observation is text appended after the model's turn (`observation_role: null`, for a base model such as the
embedded one) or one chat message of that role (`user`, `tool`) rendered as the conversation's continuation.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

from rlx.envs.protocol import Observation, Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status, Verdict

ROLES = (None, "user", "tool")
CUT = " [...]"  # marks an observation (or a line of one) cut to its cap
MIN_OBSERVATION_CHARS = 64  # below this, not even one failing test's line fits


def check_common(max_turns: int, max_observation_chars: int, observation_role: str | None) -> None:
    """The keys every built-in env yaml carries, checked with the key named and the fix."""
    if not (isinstance(max_turns, int) and max_turns >= 1):
        raise ConfigError(f"env.max_turns must be an int >= 1 (got {max_turns!r}); 1 is a single-turn episode")
    if not (isinstance(max_observation_chars, int) and max_observation_chars >= MIN_OBSERVATION_CHARS):
        raise ConfigError(
            f"env.max_observation_chars must be an int >= {MIN_OBSERVATION_CHARS} (got {max_observation_chars!r}): "
            "below that no failure can be shown"
        )
    if observation_role not in ROLES:
        raise ConfigError(
            f"env.observation_role must be null (text appended to the model's turn: base models), 'user' or "
            f"'tool' (a chat message: chat models) (got {observation_role!r})"
        )


def clip(text: str, cap: int) -> str:
    """`text` in at most `cap` characters, marked where it was cut."""
    return text if len(text) <= cap else text[: max(cap - len(CUT), 0)] + CUT


def one_line(value: object, cap: int) -> str:
    """A value the model's code produced, as one bounded line: newlines and other unprintable characters shown
    as escapes (\\n, \\x00), never sent raw to the tokenizer."""
    text = str(value)[: cap + 1]  # the escapes only lengthen it: the rest is cut anyway (and marked: > cap)
    return clip("".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text), cap)


def printable(text: str) -> str:
    """Text a program printed, its lines kept and every other unprintable character escaped (\\x00, \\x1b)."""
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)


def render(text: str, role: str | None, cap: int) -> Observation:
    """The observation as sent: text bounded by `cap`, raw or as one chat message of `role`."""
    if role is None:
        return clip(text, cap)
    return [{"role": role, "content": clip(text.strip(), cap)}]


@dataclass
class EpisodeState:
    """One episode's state: its row and the model turns taken so far."""

    row: dict
    turns: int = 0


class FeedbackEnv(abc.ABC):
    """Score each turn with `reward`; a PASS (or an INFRA verdict) ends the episode, anything else comes back
    as `describe(verdict, row, completion)`. Subclasses write `describe` (and may widen `done`)."""

    stop: tuple[str, ...] = ()  # a turn ends at eos (or max_new_tokens): the reward reads the whole completion

    def __init__(self, reward: Reward, max_turns: int, max_observation_chars: int, observation_role: str | None):
        check_common(max_turns, max_observation_chars, observation_role)
        self.reward = reward
        self.required_fields: tuple[str, ...] = tuple(reward.required_fields)  # the rows the reward reads
        self.max_turns: int = max_turns
        self.max_observation_chars: int = max_observation_chars
        self.observation_role: str | None = observation_role

    def reset(self, rows: list[dict]) -> list[EpisodeState]:
        return [EpisodeState(row) for row in rows]

    def done(self, verdict: Verdict) -> bool:
        return verdict.status in (Status.PASS, Status.INFRA)

    @abc.abstractmethod
    def describe(self, verdict: Verdict, row: dict, completion: str) -> str:
        """The observation a user would see after this verdict (each environment its own)."""

    def step(self, states: list[Any], completions: list[str]) -> list[Turn]:
        verdicts = self.reward(completions, [s.row for s in states])
        turns = []
        for state, verdict, completion in zip(states, verdicts, completions, strict=True):
            state.turns += 1
            if self.done(verdict):
                turns.append(Turn(verdict, True))
                continue
            text = self.describe(verdict, state.row, completion)
            turns.append(Turn(verdict, False, render(text, self.observation_role, self.max_observation_chars)))
        return turns

    def close(self) -> None:
        """Nothing of its own to release: the reward is the run's (rlx.train binds, checks and closes it)."""
        return None
