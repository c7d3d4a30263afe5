"""curriculum=dynamic_sampling: DAPO's dynamic sampling (Yu et al. 2025, arXiv 2503.14476, §3.2).

After scoring, groups whose rewards are all equal (all-pass or all-fail: zero advantage, zero gradient) are
dropped, and more prompts are generated until the step's batch is full of groups that carry a gradient, or
until `max_rounds` generation rounds have run (then the step trains on what it kept; the trainer reports
the rounds as curriculum/rounds and rollout/rounds). Prompts come from shuffled epochs over the pool, as in
curriculum=uniform.

Each round generates `ceil(oversample × missing)` prompts, where `missing` is how many groups the batch
still lacks; the trainer trims an overfilled batch. Paper setting: 3× oversampling, at most 10 rounds.
Departs from the paper's implementation (verl's DAPO recipe generates a full 3× batch every round): the
request shrinks with what is missing, so a nearly full batch does not cost another full 3× round.
"""

from __future__ import annotations

import math

from rlx.curriculum.base import zero_variance
from rlx.curriculum.uniform import UniformSampler


class DynamicSampler(UniformSampler):
    def __init__(self, oversample: float, max_rounds: int, seed: int) -> None:
        super().__init__(seed)
        if oversample < 1.0:
            raise ValueError(
                f"curriculum.oversample must be >= 1 (got {oversample}): it multiplies the prompts "
                "requested per round; DAPO uses 3"
            )
        if max_rounds < 1:
            raise ValueError(f"curriculum.max_rounds must be >= 1 (got {max_rounds}); DAPO uses 10")
        self.oversample = oversample
        self.max_rounds = max_rounds
        self._kept = 0

    def begin_step(self, step: int) -> None:
        super().begin_step(step)
        self._kept = 0

    def sample(self, count: int) -> list[int]:
        return super().sample(math.ceil(self.oversample * count))

    def keep(self, group_rewards: list[list[float]]) -> list[bool]:
        keep = [not zero_variance(rewards) for rewards in group_rewards]
        self._kept += sum(keep)
        return keep

    def metrics(self) -> dict[str, float]:
        return {**super().metrics(), "curriculum/kept_frac": self._kept / max(1, self._groups)}
