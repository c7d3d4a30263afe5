"""curriculum=sorted: a static easy-to-hard order from a numeric row field, optionally paced.

The order sorts the training rows by `key` (ascending: smaller is easier, the convention of the bundled
tasks' `difficulty`; `descending: true` for a score where larger is easier, such as an offline pass rate).
Rows with equal keys are shuffled once with `seed`, so a bucket is not visited in file order.

The sampler walks that order, `count` prompts per step. With pacing (`pace_steps > 0`) only a prefix of the
order is unlocked, a share that grows linearly from `pace_start` at step 0 to the whole pool at step
`pace_steps` (the competence schedule of Platanios et al. 2019, arXiv 1903.09848, in its linear form); the
walk wraps to the start of the order when it reaches the end of the unlocked prefix. `pace_steps: 0` walks
the whole order from the start: a plain static curriculum that repeats once it reaches the hardest prompt.
"""

from __future__ import annotations

import math
import random

from rlx.curriculum.base import PromptSampler, check_size


class SortedSampler(PromptSampler):
    def __init__(self, key: str, descending: bool, pace_start: float, pace_steps: int, seed: int) -> None:
        super().__init__()
        if not 0.0 < pace_start <= 1.0:
            raise ValueError(
                f"curriculum.pace_start is the share of the pool unlocked at step 0 and must be in "
                f"(0, 1] (got {pace_start}); e.g. curriculum.pace_start=0.25"
            )
        if pace_steps < 0:
            raise ValueError(f"curriculum.pace_steps must be >= 0 (got {pace_steps}); 0 disables pacing")
        self.key, self.descending = key, descending
        self.pace_start, self.pace_steps, self.seed = pace_start, pace_steps, seed
        self.order: list[int] = []
        self.position = 0
        self.wraps = 0

    def bind(self, rows: list[dict]) -> None:
        super().bind(rows)
        for i, row in enumerate(rows):
            value = row.get(self.key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                found = "lacks it" if self.key not in row else f"has {value!r}"
                raise ValueError(
                    f"curriculum=sorted orders prompts by the numeric row field curriculum.key={self.key!r}, but "
                    f"train row {i} {found} (fields: {sorted(row)}). Give every row a numeric {self.key!r} "
                    "(easy to hard), set curriculum.key to a numeric field the rows carry, or use "
                    "curriculum=uniform"
                )
        ties = list(range(len(rows)))
        random.Random(self.seed).shuffle(ties)  # a fixed tie order that consumes no sampler state
        sign = -1.0 if self.descending else 1.0
        self.order = sorted(ties, key=lambda i: sign * float(rows[i][self.key]))

    def unlocked(self, step: int) -> int:
        """How many prompts of the order are available at `step` (at least one)."""
        if self.pace_steps == 0:
            return self.size
        share = self.pace_start + (1.0 - self.pace_start) * min(1.0, step / self.pace_steps)
        return max(1, min(self.size, math.ceil(share * self.size)))

    def sample(self, count: int) -> list[int]:
        limit = self.unlocked(self.step)
        picked = []
        for _ in range(count):
            if self.position >= limit:
                self.position = 0
                self.wraps += 1
            picked.append(self.order[self.position])
            self.position += 1
        return picked

    def metrics(self) -> dict[str, float]:
        return {
            **super().metrics(),
            "curriculum/unlocked_frac": self.unlocked(self.step) / self.size,
            "curriculum/wraps": float(self.wraps),
        }

    def state_dict(self) -> dict:
        return {"position": self.position, "wraps": self.wraps, "size": self.size}

    def load_state_dict(self, state: dict) -> None:
        check_size(self, state)
        self.position, self.wraps = state["position"], state["wraps"]
