"""data=mixed_arithmetic: addition prompts of three difficulties for the tiny model, to test curricula.

Each row carries `difficulty` (0, 1, 2), the bucket it was drawn from:
  0 trivial          one-digit operands ("7+8="): the teacher is always right, so the warm-started model
                     solves them from the start and every group is all-pass (zero variance).
  1 learnable        two-digit operands with a carry out of the units column ("47+38="): the flawed
                     teacher drops that carry with probability `teacher_carry_drop`, so greedy decoding is
                     wrong but sampling finds the right sum in some completions of a group — RL can learn.
  2 near-impossible  four- and five-digit operands ("4821+17356="): never taught, so every group is
                     all-fail for the tiny model (zero variance, no gradient).
Uniform sampling spends most rollouts on buckets 0 and 2, which is exactly the waste (GRPO's zero-variance
groups) that a curriculum should avoid.

The warm-start corpus covers bucket 0 and 1 training prompts plus two-digit sums without a carry (which the
teacher gets right, so the model learns column addition), never a held-out prompt nor a bucket-2 prompt.
"""

from __future__ import annotations

import random

from rlx.data.arithmetic import carry_dropped_sum, has_units_carry, true_sum
from rlx.data.task import Task

BUCKETS = ("trivial", "learnable", "near_impossible")


def bucket_pairs(difficulty: int, rng: random.Random, count: int) -> list[tuple[int, int]]:
    """`count` distinct operand pairs of one bucket, in a random order drawn from `rng`."""
    if difficulty == 0:
        pool = [(a, b) for a in range(10) for b in range(10)]
    elif difficulty == 1:
        pool = [(a, b) for a in range(10, 100) for b in range(10, 100) if has_units_carry(a, b)]
    else:
        # Sampled rather than enumerated (the space is ~8e9); a set keeps the pairs distinct.
        chosen: dict[tuple[int, int], None] = {}
        while len(chosen) < count:
            chosen[(rng.randint(1000, 99999), rng.randint(1000, 99999))] = None
        return list(chosen)
    if count > len(pool):
        raise ValueError(f"data.{BUCKETS[difficulty]} asks for {count} prompts but bucket {difficulty} has only "
                         f"{len(pool)} distinct ones; lower data.train_sizes/data.val_sizes[{difficulty}]")
    rng.shuffle(pool)
    return pool[:count]


class MixedArithmeticTask(Task):
    """Rows "A+B=" from the three buckets, `train_sizes[d]` and `val_sizes[d]` prompts of difficulty d.

    The split is drawn with `split_seed` (not the run's seed), so every run of a sweep sees the same prompts.
    """

    strict_answers = True  # the teacher writes the bare sum: reward=math scores the whole completion

    def __init__(self, train_sizes: list[int], val_sizes: list[int], split_seed: int, teacher_carry_drop: float,
                 max_new_tokens: int) -> None:
        for key, sizes in (("train_sizes", train_sizes), ("val_sizes", val_sizes)):
            if len(sizes) != len(BUCKETS) or any(n < 0 for n in sizes):
                raise ValueError(f"data.{key} must list {len(BUCKETS)} non-negative sizes, one per bucket "
                                 f"{BUCKETS} (got {list(sizes)})")
        if sum(train_sizes) == 0 or sum(val_sizes) == 0:
            raise ValueError(f"data.train_sizes and data.val_sizes each need a prompt (got {list(train_sizes)}, "
                             f"{list(val_sizes)})")
        if not 0.0 <= teacher_carry_drop <= 1.0:
            raise ValueError(f"data.teacher_carry_drop must be a probability (got {teacher_carry_drop})")
        longest = len(str(2 * 99999)) + 1  # the longest answer, then eos
        if max_new_tokens < longest:
            raise ValueError(f"data.max_new_tokens must cover the longest answer plus eos ({longest} tokens) "
                             f"(got {max_new_tokens})")
        rng = random.Random(split_seed)
        self.train, self.val = [], []
        for difficulty in range(len(BUCKETS)):
            pairs = bucket_pairs(difficulty, rng, train_sizes[difficulty] + val_sizes[difficulty])
            self.val += [self._row(a, b, difficulty) for a, b in pairs[: val_sizes[difficulty]]]
            self.train += [self._row(a, b, difficulty) for a, b in pairs[val_sizes[difficulty]:]]
        rng.shuffle(self.train)
        self.teacher_carry_drop = teacher_carry_drop
        self.max_new_tokens = max_new_tokens
        self.sizes = (list(train_sizes), list(val_sizes))

    @staticmethod
    def _row(a: int, b: int, difficulty: int) -> dict:
        return {"prompt": f"{a}+{b}=", "answer": str(true_sum(a, b)), "operands": [a, b], "difficulty": difficulty}

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """`count` (prompt, completion) pairs: half from the taught training prompts (buckets 0 and 1, the
        teacher dropping carries on bucket 1), half two-digit sums without a carry (always right)."""
        rng = random.Random(seed)
        taught = [row["operands"] for row in self.train if row["difficulty"] < 2]
        no_carry = [(a, b) for a in range(10, 100) for b in range(10, 100) if not has_units_carry(a, b)]
        if not taught:
            raise ValueError("data.train_sizes has no bucket-0 or bucket-1 prompt, so the warm start has nothing "
                             "to teach; give data.train_sizes[0] or [1] a positive size")
        examples = []
        for i in range(count):
            a, b = rng.choice(taught) if i % 2 == 0 else rng.choice(no_carry)
            flawed = a >= 10 and rng.random() < self.teacher_carry_drop
            answer = carry_dropped_sum(a, b) if flawed else true_sum(a, b)
            examples.append((f"{a}+{b}=", str(answer)))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "mixed_arithmetic", "sizes": self.sizes, "first": self.train[0]["prompt"],
                "teacher_carry_drop": self.teacher_carry_drop}
