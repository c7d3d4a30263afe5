"""curriculum=learnable_band: spend rollouts on prompts whose pass rate lies inside a band (lo, hi).

A prompt the policy always solves or always fails gives a zero-variance group and no gradient; the prompts
worth sampling are those in between. The sampler keeps an online estimate of each prompt's pass rate:
  - unseen prompts count as `prior` (inside the band by default: a prompt is presumed learnable until a
    group says otherwise, so every prompt gets tried);
  - a prompt's first group sets its estimate to the group's mean reward; later groups move it by an
    exponential average, estimate ← (1 − ema)·estimate + ema·mean, so it tracks the improving policy.
Each sampled slot is, with probability `explore`, an exploration slot that walks a shuffled order of the
whole pool (every prompt is revisited at a steady rate, so an estimate made early — a prompt failed when
the policy was weak, or solved once by luck — does not freeze); the other slots draw, without replacement,
from the prompts whose estimate lies in lo <= estimate <= hi. When the band holds fewer prompts than the
step needs, the remaining slots explore too.

The band is closed, [lo, hi], so lo = 0 or hi = 1 gives a one-sided band. With a 0/1 reward and G
completions a group mean is a multiple of 1/G: lo = 0.1 and hi = 0.9 with G = 8 admit every group mean
but all-fail and all-pass, and a solved prompt's estimate climbs past hi after a few all-pass groups.
"""

from __future__ import annotations

import random

from rlx.curriculum.base import PromptSampler, check_size


class LearnableBandSampler(PromptSampler):
    def __init__(self, lo: float, hi: float, prior: float, ema: float, explore: float, seed: int) -> None:
        super().__init__()
        if not lo < hi:
            raise ValueError(
                f"curriculum.lo must be below curriculum.hi (got lo={lo}, hi={hi}): the band "
                "[lo, hi] of pass rates worth sampling would be empty. Use e.g. curriculum.lo=0.1 "
                "curriculum.hi=0.9"
            )
        if not 0.0 < ema <= 1.0:
            raise ValueError(
                f"curriculum.ema is the weight of a new group's mean in the estimate and must be in "
                f"(0, 1] (got {ema}); e.g. curriculum.ema=0.5"
            )
        if not 0.0 <= explore <= 1.0:
            raise ValueError(
                f"curriculum.explore is the share of exploration slots and must be in [0, 1] "
                f"(got {explore}); e.g. curriculum.explore=0.2"
            )
        self.lo, self.hi, self.prior, self.ema, self.explore = lo, hi, prior, ema, explore
        self.rng = random.Random(seed)
        self.estimate: list[float | None] = []  # None: never observed (counts as `prior`)
        self.explore_order: list[int] = []
        self.explore_position = 0
        self.explored = 0  # exploration slots served this step (a metric)

    def bind(self, rows: list[dict]) -> None:
        super().bind(rows)
        self.estimate = [None] * self.size

    def begin_step(self, step: int) -> None:
        super().begin_step(step)
        self.explored = 0

    def value(self, index: int) -> float:
        estimate = self.estimate[index]
        return self.prior if estimate is None else estimate

    def in_band(self) -> list[int]:
        return [i for i in range(self.size) if self.lo <= self.value(i) <= self.hi]

    def _next_explored(self, taken: set[int]) -> int:
        """The next prompt of the shuffled whole-pool walk not already taken this round."""
        for _ in range(2 * self.size + 1):
            if self.explore_position >= len(self.explore_order):
                self.explore_order = list(range(self.size))
                self.rng.shuffle(self.explore_order)
                self.explore_position = 0
            index = self.explore_order[self.explore_position]
            self.explore_position += 1
            if index not in taken:
                return index
        raise RuntimeError("unreachable: a round asked for more distinct prompts than the pool holds")

    def sample(self, count: int) -> list[int]:
        n_explore = sum(1 for _ in range(count) if self.rng.random() < self.explore)
        band = self.in_band()
        exploit = self.rng.sample(band, min(count - n_explore, len(band)))
        picked, taken = list(exploit), set(exploit)
        while len(picked) < count:
            index = self._next_explored(taken) if len(taken) < self.size else self._next_explored(set())
            picked.append(index)
            taken.add(index)
            self.explored += 1
        return picked

    def observe(self, indices: list[int], group_rewards: list[list[float]]) -> None:
        super().observe(indices, group_rewards)
        for index, rewards in zip(indices, group_rewards, strict=True):
            if not rewards:  # every sample of the group was INFRA: nothing was learnt about the prompt
                continue
            mean = sum(rewards) / len(rewards)
            old = self.estimate[index]
            self.estimate[index] = mean if old is None else (1.0 - self.ema) * old + self.ema * mean

    def metrics(self) -> dict[str, float]:
        seen = sum(1 for e in self.estimate if e is not None)
        return {
            **super().metrics(),
            "curriculum/pool_in_band": len(self.in_band()) / self.size,
            "curriculum/seen_frac": seen / self.size,
            "curriculum/explore_frac": self.explored / max(1, self._groups),
        }

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.getstate(),
            "estimate": list(self.estimate),
            "explore_order": list(self.explore_order),
            "explore_position": self.explore_position,
            "size": self.size,
        }

    def load_state_dict(self, state: dict) -> None:
        check_size(self, state)
        self.rng.setstate(state["rng"])
        self.estimate = list(state["estimate"])
        self.explore_order, self.explore_position = list(state["explore_order"]), state["explore_position"]
