"""data=multi_sum: sums of two to four two-digit numbers, answered directly or after a scratchpad.

A benchmark task that does not saturate on the tiny model in a CPU budget, and whose answers vary in length.

Prompt "47+38+25="; two ways to answer, both scored by the last number (reward=math, strict=false):
  direct      "110"
  scratchpad  "[85+25=110]110": the running sum, one addition per step, in brackets, then the answer.
The SFT teacher writes the scratchpad with probability `teacher_scratchpad` and is always right inside it;
answering directly it sums each column and forgets the carries with probability `teacher_carry_drop`
(47+38+25 → "90": units 7+8+5 = 20 written as 0, tens 4+3+2 = 9). Greedy imitation answers directly (the
teacher's mode), so it is right about as often as a problem has no carry; sampling at T = 1 finds the
scratchpad, which RL can learn to use. A longer sum needs more scratchpad steps (more chances for the tiny
model to slip) and carries more often, so the gain has room to grow past a few minutes of CPU.

Rows carry `difficulty` = the number of operands minus two (0, 1, 2), so `curriculum=sorted` and the
per-difficulty pass rates (`curriculum/pass_rate_d<k>`) apply. The split is drawn with `split_seed` (not the
run's seed): every run sees the same prompts, and held-out prompts are never trained on.
"""

from __future__ import annotations

import random

from rlx.data.task import Task


def column_sum_without_carries(operands: list[int]) -> int:
    """Σ operands with the carry out of the units column forgotten: the tens digits summed, then the units
    column's sum mod 10 (for two operands, rlx.data.arithmetic.carry_dropped_sum)."""
    return sum(x // 10 for x in operands) * 10 + sum(x % 10 for x in operands) % 10


def has_carry(operands: list[int]) -> bool:
    return sum(x % 10 for x in operands) >= 10


def scratchpad(operands: list[int]) -> str:
    """"[s2+a3=s3+a4=s4]s4": the running sum after the first two operands, each later operand added in
    turn, then the answer (for two operands "[s2]s2")."""
    total = operands[0] + operands[1]
    steps = str(total)
    for x in operands[2:]:
        total += x
        steps += f"+{x}={total}"
    return f"[{steps}]{total}"


class MultiSumTask(Task):
    """Prompts "a1+...+ak=" with k in `operand_counts` (equally often) and operands in [low, high].

    Args:
        operand_counts: how many operands a prompt may have (2 to 4).
        train_size, val_size: prompts per operand count in each split (distinct, disjoint splits).
        teacher_scratchpad: probability that the warm-start teacher writes the scratchpad.
        teacher_carry_drop: probability that a direct teacher answer forgets the carries.
        reward_strict: the reward's `strict` flag (read from the reward config); a whole-completion check
            would score every scratchpad 0, so it is refused.
    """

    strict_answers = False  # the answer is the last number (reward=math with strict=null extracts it)

    def __init__(self, operand_counts: list[int], low: int, high: int, train_size: int, val_size: int,
                 split_seed: int, teacher_scratchpad: float, teacher_carry_drop: float, max_new_tokens: int,
                 reward_strict: bool, warm_start_min_match: float = Task.warm_start_min_match,
                 warm_start_plateau_loss: float | None = Task.warm_start_plateau_loss) -> None:
        if reward_strict:
            raise ValueError("data=multi_sum answers after an optional scratchpad, which reward.strict=true (the "
                             "whole completion must be the number) scores 0: set reward.strict=false, so the last "
                             "number is the answer")
        if not operand_counts or any(not 2 <= k <= 4 for k in operand_counts):
            raise ValueError(f"data.operand_counts must list counts in [2, 4] (got {list(operand_counts)})")
        if not 10 <= low < high <= 99:
            raise ValueError(f"data.low/data.high must be two-digit with low < high (got {low}, {high})")
        for key, value in (("teacher_scratchpad", teacher_scratchpad), ("teacher_carry_drop", teacher_carry_drop)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"data.{key} must be a probability (got {value})")
        counts = sorted(set(operand_counts))
        longest = max(len(scratchpad([high] * k)) for k in counts) + 1  # + end of sequence
        if max_new_tokens < longest:
            raise ValueError(f"data.max_new_tokens={max_new_tokens} cannot hold the longest scratchpad and its end of "
                             f"sequence ({longest} tokens): raise it to at least {longest}")
        rng = random.Random(split_seed)
        self.train, self.val = [], []
        for k in counts:
            space = (high - low + 1) ** k
            if train_size + val_size > space // 2:
                raise ValueError(f"data.train_size + data.val_size = {train_size + val_size} is more than half of the "
                                 f"{space} prompts with {k} operands in [{low}, {high}]: lower them")
            chosen: dict[tuple[int, ...], None] = {}
            while len(chosen) < train_size + val_size:
                chosen[tuple(rng.randint(low, high) for _ in range(k))] = None
            prompts = list(chosen)
            self.val += [self._row(list(p)) for p in prompts[:val_size]]
            self.train += [self._row(list(p)) for p in prompts[val_size:]]
        rng.shuffle(self.train)
        self.teacher_scratchpad, self.teacher_carry_drop = teacher_scratchpad, teacher_carry_drop
        self.max_new_tokens = max_new_tokens
        self.spec = {"operand_counts": counts, "low": low, "high": high, "train_size": train_size,
                     "val_size": val_size, "split_seed": split_seed}
        self.warm_start_min_match = warm_start_min_match
        self.warm_start_plateau_loss = warm_start_plateau_loss

    @staticmethod
    def _row(operands: list[int]) -> dict:
        return {"prompt": "+".join(map(str, operands)) + "=", "answer": str(sum(operands)), "operands": operands,
                "difficulty": len(operands) - 2, "carry": int(has_carry(operands))}

    def teacher(self, operands: list[int], rng: random.Random) -> str:
        """One sampled teacher answer: the scratchpad, else a direct answer that may forget the carries."""
        if rng.random() < self.teacher_scratchpad:
            return scratchpad(operands)
        flawed = rng.random() < self.teacher_carry_drop
        return str(column_sum_without_carries(operands) if flawed else sum(operands))

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """`count` (prompt, completion) pairs from the teacher, over training prompts only."""
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            row = rng.choice(self.train)
            examples.append((row["prompt"], self.teacher(row["operands"], rng)))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "multi_sum", **self.spec, "teacher_scratchpad": self.teacher_scratchpad,
                "teacher_carry_drop": self.teacher_carry_drop}
