"""A small program-synthesis task the tiny model can learn: write `f` from three input/output examples.

Prompt: "f(1)=5 f(2)=8 f(3)=11\n"; a correct completion: "def f(x): return 3*x+2". The hidden function is
`a*x+b` (a in [1, a_max], b in [0, b_max]); reward=unit_tests checks it on inputs beyond the three shown,
so the examples cannot simply be echoed. As with arithmetic, the SFT teacher is flawed: with probability
`teacher_error` it forgets the offset (writes `a*x`), so imitation has a ceiling that the verifiable reward
can break. The held-out split is a fixed set of (a, b) pairs disjoint from training, drawn with split_seed.
"""

from __future__ import annotations

import random

from rlx.data.task import Task

TEST_INPUTS = (-3, 0, 4, 7, 10)


def solution(a: int, b: int) -> str:
    return f"def f(x): return {a}*x+{b}"


class ProgramsTask(Task):
    def __init__(self, a_max: int, b_max: int, val_size: int, split_seed: int, teacher_error: float,
                 max_new_tokens: int) -> None:
        pairs = [(a, b) for a in range(1, a_max + 1) for b in range(0, b_max + 1)]
        if not 0 < val_size < len(pairs):
            raise ValueError(f"data.val_size must be in (0, {len(pairs)}) for a_max={a_max}, b_max={b_max} "
                             f"(got {val_size})")
        if not 0.0 <= teacher_error <= 1.0:
            raise ValueError(f"data.teacher_error must be a probability (got {teacher_error})")
        random.Random(split_seed).shuffle(pairs)
        self.train = [self._row(a, b) for a, b in pairs[val_size:]]
        self.val = [self._row(a, b) for a, b in pairs[:val_size]]
        self.teacher_error = teacher_error
        self.max_new_tokens = max_new_tokens

    @staticmethod
    def _row(a: int, b: int) -> dict:
        shown = " ".join(f"f({x})={a * x + b}" for x in (1, 2, 3))
        return {"prompt": f"{shown}\n", "entry_point": "f", "params": [a, b],
                "tests": [{"input": [x], "output": a * x + b} for x in TEST_INPUTS]}

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            row = rng.choice(self.train)
            a, b = row["params"]
            examples.append((row["prompt"], f"def f(x): return {a}*x" if rng.random() < self.teacher_error
                             else solution(a, b)))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "programs", "n_train": len(self.train), "first": self.train[0]["prompt"],
                "teacher_error": self.teacher_error}
