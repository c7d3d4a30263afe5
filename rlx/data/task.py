"""What the trainer needs from a task: rows for training and for the held-out split.

A row is a dict with at least `prompt` (the text the policy continues) plus whatever fields the reward
reads (`answer` for math, `tests` for unit tests, ...). Rewards are plain callables over completions and rows,
as in TRL, so a new task is a new row source, not a new code path.
"""

from __future__ import annotations

from rlx.errors import ConfigError


class Task:
    train: list[dict]
    val: list[dict]
    max_new_tokens: int
    # How well a student must imitate this task's teacher for its warm start to count: the share of greedy
    # answers equal to the teacher's sampled ones (a noisy teacher caps it below 1), and the SFT loss above
    # which an attempt is still on a stuck plateau (None: no early check). Tasks with a known teacher set both.
    warm_start_min_match: float = 0.3
    warm_start_plateau_loss: float | None = None

    def check_fields(self, fields: tuple[str, ...]) -> None:
        """Every row of both splits must carry `prompt` and the reward's `fields`."""
        for split, rows in (("train", self.train), ("val", self.val)):
            for i, row in enumerate(rows):
                missing = [f for f in ("prompt", *fields) if f not in row]
                if missing:
                    raise ConfigError(f"{type(self).__name__} {split} row {i} lacks field(s) {missing} that the "
                                     f"reward needs; rows have {sorted(row)}")

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """(prompt, completion) pairs for the supervised warm start; tasks without a teacher raise."""
        raise ConfigError(
            f"{type(self).__name__} has no warm-start corpus: set model.warm_start=null or use a task that has one"
        )

    def fingerprint(self) -> dict:
        """What identifies this task's warm-start corpus (part of the warm-start cache key)."""
        return {"task": type(self).__name__}
