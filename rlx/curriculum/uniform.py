"""curriculum=uniform: shuffled epochs over the training set (every prompt once per epoch)."""

from __future__ import annotations

import random

from rlx.curriculum.base import PromptSampler, check_size


class UniformSampler(PromptSampler):
    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.order: list[int] = []
        self.position = 0
        self.epoch = 0

    def _reshuffle(self) -> None:
        self.order = list(range(self.size))
        self.rng.shuffle(self.order)
        self.position = 0
        self.epoch += 1

    def sample(self, count: int) -> list[int]:
        picked: list[int] = []
        while len(picked) < count:
            if self.position >= len(self.order):
                self._reshuffle()
            take = self.order[self.position : self.position + count - len(picked)]
            self.position += len(take)
            picked.extend(take)
        return picked

    def metrics(self) -> dict[str, float]:
        return {**super().metrics(), "curriculum/epoch": float(self.epoch)}

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.getstate(),
            "order": list(self.order),
            "position": self.position,
            "epoch": self.epoch,
            "size": self.size,
        }

    def load_state_dict(self, state: dict) -> None:
        check_size(self, state)
        self.rng.setstate(state["rng"])
        self.order, self.position, self.epoch = list(state["order"]), state["position"], state["epoch"]
