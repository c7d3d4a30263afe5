"""reward=math: the completion's final answer must equal the row's `answer`.

`strict=True` (the embedded arithmetic default) requires the whole completion to be the answer, so a
policy cannot earn reward by padding the answer with other text. Otherwise the final answer is extracted
(see `extract_answer`) and compared numerically when both sides are numbers, as text otherwise.
"""

from __future__ import annotations

import re

from rlx.rewards.base import Status, Verdict

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def extract_answer(text: str) -> str | None:
    """The last `\\boxed{...}`, else the text after the last `####` or `Answer:`, else the last number."""
    boxed = re.findall(r"\\boxed\{([^{}]*)\}", text)
    if boxed:
        return boxed[-1].strip()
    for marker in ("####", "Answer:"):
        if marker in text:
            return text.rsplit(marker, 1)[1].strip().splitlines()[0].strip() if text.rsplit(marker, 1)[1].strip() else None
    numbers = NUMBER.findall(text)
    return numbers[-1] if numbers else None


def answers_equal(predicted: str, reference: str) -> bool:
    if NUMBER.fullmatch(predicted) and NUMBER.fullmatch(reference):
        return float(predicted) == float(reference)
    return predicted.strip() == reference.strip()


class MathReward:
    required_fields = ("answer",)

    def __init__(self, strict: bool) -> None:
        self.strict = strict

    def score_one(self, completion: str, row: dict) -> Verdict:
        reference = str(row["answer"])
        predicted = completion.strip() if self.strict else extract_answer(completion)
        if not predicted:
            return Verdict(0.0, Status.FORMAT, {"correct": 0.0})
        correct = answers_equal(predicted, reference)
        return Verdict(float(correct), Status.PASS if correct else Status.FAIL, {"correct": float(correct)},
                       {"extracted": predicted})

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        return [self.score_one(c, r) for c, r in zip(completions, rows, strict=True)]
