"""The warm-start teacher's own held-out pass@1 and pass@k: the bar RL's accuracy is compared with in claim (a).

Imitating the teacher perfectly gives a policy whose sampled pass@1 is the teacher's; RL that only selects
among answers the teacher already writes cannot beat the teacher's pass@k on the same prompts. Estimated per
held-out prompt by drawing `draws` teacher answers (the task's own `teacher(operands, rng)`, as the warm
start does) and scoring each by its last number against the row's answer; pass@k = 1 − (1 − p)^k from the
per-prompt pass rate p. A task without a teacher (e.g. a jsonl dataset) has none: the rows say so.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

DRAWS = 400  # per prompt: a pass rate's standard error ≤ 0.025, the mean over 192 prompts' ≤ 0.002


def last_number(text: str) -> str | None:
    found = re.findall(r"-?\d+", text)
    return found[-1] if found else None


def teacher_pass(run_dir: str | Path, draws: int = DRAWS, seed: int = 0) -> dict[str, float] | None:
    """{held-out prompt: the teacher's pass rate} for the task in the run's config.yaml, or None when the task
    has no teacher."""
    # deferred: hydra and omegaconf only to build a teacher reward; this module is stdlib-only otherwise
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return None
    task = instantiate(OmegaConf.load(path).data, _convert_="all")
    teacher = getattr(task, "teacher", None)
    if teacher is None or not task.val or "operands" not in task.val[0]:
        return None
    rng = random.Random(seed)
    return {
        row["prompt"]: sum(last_number(teacher(row["operands"], rng)) == row["answer"] for _ in range(draws)) / draws
        for row in task.val
    }


def pass_at(rates: dict[str, float], k: int) -> dict[str, float]:
    """Per prompt, the chance that at least one of k independent answers passes: 1 − (1 − p)^k."""
    return {prompt: 1.0 - (1.0 - p) ** k for prompt, p in rates.items()}
