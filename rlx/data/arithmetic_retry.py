"""`data=arithmetic_retry` (brought by `env=arithmetic_retry`): the default "A+B=" task, whose flawed teacher also
shows the second try. The embedded model is warm-started on a single turn per sequence and has never seen
anything after its eos, so on its own it cannot answer a problem posed later in the context (measured: 0 of 196
greedy second tries right with the hint, bench/RESULTS-multiturn.md). Here the teacher's corpus holds, after
each carry-dropped answer, the episode env=arithmetic_retry plays: its eos, the default feedback (" low\\n" and
the sum that closes the gap, "22+10=") and a second answer that uses the hint with probability
`teacher_uses_hint`, else repeats the first. RL then has a second turn to improve: the share of second tries
that use the hint."""

from __future__ import annotations

import random

from rlx.data.arithmetic import ArithmeticTask, carry_dropped_sum, true_sum
from rlx.models.tokenizer import EOS


class ArithmeticRetryTask(ArithmeticTask):
    """ArithmeticTask's rows and splits; `teacher_uses_hint`: the probability that the teacher's second answer
    after a carry-dropped first one is the hinted sum (else its first answer again)."""

    def __init__(self, *, teacher_uses_hint: float, **arithmetic) -> None:
        super().__init__(**arithmetic)
        if isinstance(teacher_uses_hint, bool) or not 0.0 <= teacher_uses_hint <= 1.0:
            raise ValueError(f"data.teacher_uses_hint must be a probability in [0, 1] (got {teacher_uses_hint!r})")
        self.teacher_uses_hint = teacher_uses_hint

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """`count` (prompt, completion) pairs over training prompts: the teacher's answer, and after a wrong one
        its eos, the feedback and its second answer (the completion's last eos is the warm start's)."""
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            a, b = rng.choice(self.train)["operands"]
            first = carry_dropped_sum(a, b) if rng.random() < self.teacher_carry_drop else true_sum(a, b)
            completion = str(first)
            if first != true_sum(a, b):  # carry dropped: exactly 10 too low
                second = true_sum(a, b) if rng.random() < self.teacher_uses_hint else first
                completion += f"{EOS} low\n{first}+{true_sum(a, b) - first}={second}"
            examples.append((f"{a}+{b}=", completion))
        return examples

    def fingerprint(self) -> dict:
        return {**super().fingerprint(), "task": "arithmetic_retry", "teacher_uses_hint": self.teacher_uses_hint}
