"""Prompt samplers (the `curriculum` group): which training prompts each RL step spends rollouts on.

Why a sampler at all: GRPO learns nothing from a group whose rewards are all equal (all-fail on prompts
beyond the policy, all-pass on prompts it has solved); those rollouts cost generation and reward time and
give zero gradient. A sampler decides where the rollouts go, and can learn from the scores where they pay.

The protocol, per RL step (the trainer drives it; see `rlx.rollout.collect.collect`):
    begin_step(step)                 once, with the trainer's RL step (pacing, per-step metrics)
    repeat, up to `max_rounds` generation rounds, while fewer than the step's prompts were kept:
        sample(count)                prompt indices for one round; may return *more* than `count`
                                     (oversampling; the trainer trims an overfilled batch)
        observe(indices, rewards)    one list of valid rewards per sampled group
        keep(rewards)                which of those groups enter the batch
    metrics()                        once, when the step is logged
A sampler's whole state (RNG, position, statistics) round-trips through `state_dict` for an exact resume;
the per-step counters are rebuilt by `begin_step` and need no saving.

Every sampler reports, for the groups generated this step: `curriculum/rounds` (generation rounds),
`curriculum/groups` (groups generated) and, when the rows carry a `difficulty` field,
`curriculum/pass_rate_d<k>` (mean reward of the step's groups of difficulty k; the pass rate for a 0/1
reward such as reward=math). Every difficulty of the rows has its column from the first step (metrics.csv's
columns do not come and go): NaN in a step that drew no group of it, a mean of nothing.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod


class PromptSampler(ABC):
    max_rounds: int = 1

    def __init__(self) -> None:
        self.size = 0
        self.difficulty: list | None = None  # row i's `difficulty`, when every row has one
        self.step = 0
        self._rounds = 0
        self._groups = 0
        self._bucket_sums: dict = {}  # difficulty -> [reward sum, reward count] this step

    def bind(self, rows: list[dict]) -> None:
        """Called with the training rows before the first `sample` (subclasses extend it). Binding is
        deterministic and consumes no randomness, so binding twice is harmless."""
        if not rows:
            raise ValueError(
                f"curriculum {type(self).__name__} was given no training rows: the task's train split is empty"
            )
        self.size = len(rows)
        self.difficulty = [row["difficulty"] for row in rows] if all("difficulty" in r for r in rows) else None

    def begin_step(self, step: int) -> None:
        self.step = step
        self._rounds = 0
        self._groups = 0
        self._bucket_sums = {}

    @abstractmethod
    def sample(self, count: int) -> list[int]: ...

    def observe(self, indices: list[int], group_rewards: list[list[float]]) -> None:
        """Scores of the groups just generated (one list of valid rewards per index). Subclasses that learn
        from scores extend this and call it."""
        self._rounds += 1
        self._groups += len(indices)
        if self.difficulty is None:
            return
        for index, rewards in zip(indices, group_rewards, strict=True):
            sums = self._bucket_sums.setdefault(self.difficulty[index], [0.0, 0])
            sums[0] += sum(rewards)
            sums[1] += len(rewards)

    def keep(self, group_rewards: list[list[float]]) -> list[bool]:
        return [True] * len(group_rewards)

    def metrics(self) -> dict[str, float]:
        out = {"curriculum/rounds": float(self._rounds), "curriculum/groups": float(self._groups)}
        for bucket in sorted(set(self.difficulty or ())):
            total, count = self._bucket_sums.get(bucket, (0.0, 0))
            out[f"curriculum/pass_rate_d{bucket}"] = total / count if count else math.nan
        return out

    @abstractmethod
    def state_dict(self) -> dict: ...

    @abstractmethod
    def load_state_dict(self, state: dict) -> None: ...


def check_size(sampler: PromptSampler, state: dict) -> None:
    """A checkpoint's sampler state indexes the training rows it was made with: refuse other rows."""
    if state["size"] != sampler.size:
        raise ValueError(
            f"the checkpoint's curriculum state ({type(sampler).__name__}) is for {state['size']} "
            f"training prompts but this run has {sampler.size}: resume with the same data config "
            "as the checkpointed run (ckpt_path)"
        )


def zero_variance(rewards: list[float]) -> bool:
    """A group whose valid rewards are all equal (or that has fewer than two) gives GRPO no gradient."""
    return len(rewards) < 2 or max(rewards) == min(rewards)
