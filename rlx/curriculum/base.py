"""Prompt samplers (the `curriculum` group): which training prompts each RL step spends rollouts on.

The trainer asks `sample(count)` for prompt indices, generates and scores a group per prompt, then calls
`observe(indices, group_rewards)` so a sampler can learn which prompts are still informative, and
`keep(group_rewards)` to decide which groups enter the batch. While fewer than the step's number of prompts
were kept, it samples again, up to `max_rounds` generation rounds (DAPO's dynamic sampling uses this).
A sampler's whole state (RNG, position, statistics) round-trips through `state_dict` for exact resume.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class PromptSampler(ABC):
    max_rounds: int = 1

    @abstractmethod
    def bind(self, rows: list[dict]) -> None:
        """Called once with the training rows before the first `sample`."""

    @abstractmethod
    def sample(self, count: int) -> list[int]:
        ...

    def observe(self, indices: list[int], group_rewards: list[list[float]]) -> None:
        """Scores of the groups just generated (one list of valid rewards per index)."""

    def keep(self, group_rewards: list[list[float]]) -> list[bool]:
        return [True] * len(group_rewards)

    def metrics(self) -> dict[str, float]:
        return {}

    @abstractmethod
    def state_dict(self) -> dict:
        ...

    @abstractmethod
    def load_state_dict(self, state: dict) -> None:
        ...
