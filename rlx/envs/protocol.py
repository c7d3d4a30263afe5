"""The episode protocol: what a `conf/env/` choice is.

An environment starts an episode from a dataset row, takes each of the model's turns as text and answers with a
`Turn`: this turn's verdict (reward, status, components: the reward's own `Verdict`), whether the episode is
done, and what the model sees before its next turn. Calls are batched: every episode in flight advances
together, so an environment that scores in a sandbox pool (code_repair, kernel_refine) gets the whole turn at
once. Single-turn RL is the one-turn episode of `RewardEnv` (rlx.envs.single): the default, not a second path.

The trainer keeps the model's sampled token ids as sampled; an observation is only ever appended as context
(tokenized raw when it is text, rendered as a continuation of the chat when it is messages). It gets no
log-prob, no gradient and no place in any token count.

An environment that raises is not the model's fault: its episodes end with status INFRA (excluded from the
statistics), never a crashed trainer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rlx.envs.trajectory import Trajectory, TurnSampler
from rlx.rewards.base import Verdict

#: What the model sees next: text appended verbatim after its turn, or chat messages ({"role", "content"}:
#: typically "user" or "tool") rendered with the tokenizer's chat template as the conversation's continuation.
Observation = str | list[dict[str, str]] | None


@dataclass(frozen=True)
class Turn:
    """One episode's answer to one model turn."""

    verdict: Verdict  # this turn's reward, status and components (the episode's outcome on its last turn)
    done: bool  # the episode ends here (the environment's own decision; max_turns and the context cap end it too)
    observation: Observation = None  # shown to the model before its next turn; ignored when done


@runtime_checkable
class Environment(Protocol):
    """What every conf/env/ choice builds. `reset` and `step` take the episodes in flight together (one list
    entry each, in the same order); episode state is whatever `reset` returns, opaque to the trainer."""

    #: dataset fields every row must carry (checked at start, naming the file and row)
    required_fields: tuple[str, ...]
    #: the most model turns an episode may take (the trainer ends it after this many, status MAX_TURNS)
    max_turns: int

    def reset(self, rows: list[dict]) -> list[Any]: ...

    def step(self, states: list[Any], completions: list[str]) -> list[Turn]: ...

    def close(self) -> None: ...


@runtime_checkable
class EpisodeDriver(Protocol):
    """An environment that runs its own turn loop (env=verifiers: the library renders the conversation and calls
    the model): it takes the rollout engine as a `TurnSampler` and returns each row's episodes already flattened,
    one `Trajectory` per branch of its trace (normally one; more means the library's re-rendered history did not
    extend the ids sampled before, and each branch is its own sample in the row's group)."""

    required_fields: tuple[str, ...]
    max_turns: int

    def episodes(
        self, rows: list[dict], sampler: TurnSampler, tokenizer, max_new_tokens: int
    ) -> list[list[Trajectory]]: ...

    def metrics(self) -> dict[str, float]: ...

    def close(self) -> None: ...


def runs_episodes(env: object) -> bool:
    """Whether the held-out evaluation needs whole episodes (a multi-turn environment, or one that drives the
    model itself) rather than one answer per row scored by the reward."""
    return isinstance(env, EpisodeDriver) or (isinstance(env, Environment) and env.max_turns > 1)
