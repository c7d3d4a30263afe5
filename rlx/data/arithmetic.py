"""The embedded default task: two-number addition, taught first by a *flawed teacher*.

The teacher drops the carry from the units column into the tens column with probability
`teacher_carry_drop` (47+38 → "75" instead of "85"). Supervised imitation of that teacher has a ceiling
(greedy decoding picks the teacher's mode: wrong on every problem with a carry), which a verifiable reward
can break: this is the seed's central claim, and `python -m rlx` shows it.
"""

from __future__ import annotations

import random

from rlx.data.task import Task


def true_sum(a: int, b: int) -> int:
    return a + b


def carry_dropped_sum(a: int, b: int) -> int:
    """a + b with the carry out of the units column forgotten (a column-wise sum, units taken mod 10)."""
    units = (a % 10 + b % 10) % 10
    return (a // 10 + b // 10) * 10 + units


def has_units_carry(a: int, b: int) -> bool:
    return a % 10 + b % 10 >= 10


class ArithmeticTask(Task):
    """Prompts "A+B=" with operands in [low, high]; the answer is the decimal sum.

    The held-out split is a fixed random subset of operand pairs, disjoint from the training pairs, drawn
    with `split_seed` so it does not move when the run's seed changes.
    """

    strict_answers = True  # the teacher writes the bare sum: reward=math scores the whole completion

    def __init__(
        self,
        low: int,
        high: int,
        val_size: int,
        split_seed: int,
        teacher_carry_drop: float,
        max_new_tokens: int,
        warm_start_min_match: float = Task.warm_start_min_match,
        warm_start_plateau_loss: float | None = Task.warm_start_plateau_loss,
    ) -> None:
        if not 0 <= low < high:
            raise ValueError(f"data.low/data.high must satisfy 0 <= low < high (got {low}, {high})")
        if not 0.0 <= teacher_carry_drop <= 1.0:
            raise ValueError(f"data.teacher_carry_drop must be a probability (got {teacher_carry_drop})")
        pairs = [(a, b) for a in range(low, high + 1) for b in range(low, high + 1)]
        if not 0 < val_size < len(pairs):
            raise ValueError(f"data.val_size must be in (0, {len(pairs)}) for these operands (got {val_size})")
        random.Random(split_seed).shuffle(pairs)
        self.train = [self._row(a, b) for a, b in pairs[val_size:]]
        self.val = [self._row(a, b) for a, b in pairs[:val_size]]
        self.teacher_carry_drop = teacher_carry_drop
        self.max_new_tokens = max_new_tokens
        self.warm_start_min_match = warm_start_min_match
        self.warm_start_plateau_loss = warm_start_plateau_loss

    @staticmethod
    def _row(a: int, b: int) -> dict:
        return {
            "prompt": f"{a}+{b}=",
            "answer": str(true_sum(a, b)),
            "operands": [a, b],
            "difficulty": int(has_units_carry(a, b)),
        }

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """`count` (prompt, completion) pairs from the flawed teacher, over training prompts only."""
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            a, b = rng.choice(self.train)["operands"]
            flawed = rng.random() < self.teacher_carry_drop
            answer = carry_dropped_sum(a, b) if flawed else true_sum(a, b)
            examples.append((f"{a}+{b}=", str(answer)))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "arithmetic", "n_train": len(self.train), "first": self.train[0]["prompt"],
                "teacher_carry_drop": self.teacher_carry_drop}
