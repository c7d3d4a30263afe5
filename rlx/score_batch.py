"""`python -m rlx.score ... tasks=T.jsonl completions=C.jsonl out=V.jsonl`: a file of completions, scored.

Every input problem is found before anything runs and reported as one line naming the file and line: a task
row the reward cannot read (its tests do not parse), a completion row without `task_id`/`completion` or with
an unknown `task_id`. Scoring goes through the reward exactly as training calls it (its sandbox scores a
chunk in parallel); verdict rows are written as each chunk finishes.
"""

from __future__ import annotations

import json
from collections import Counter
from math import comb
from pathlib import Path

from rlx.data.jsonl import DataError, read_rows

CHUNK = 256  # completions per reward call: the sandbox workers share each chunk


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with n samples, c of them correct (Chen et al. 2021, arXiv 2107.03374, eq. 1):
    1 - C(n-c, k) / C(n, k), the chance that k samples drawn without replacement hold at least one correct."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task (got {n})")
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def load_tasks(path: str, reward) -> dict:
    rows = read_rows(path, ["task_id", *reward.required_fields])
    tasks: dict = {}
    for line, row in rows:
        problem = reward.row_problem(row)
        if problem:
            raise DataError(f"{path}:{line}: task {row['task_id']!r}: {problem}")
        if row["task_id"] in tasks:
            raise DataError(
                f"{path}:{line}: task_id {row['task_id']!r} appears twice (first at line {tasks[row['task_id']][0]})"
            )
        tasks[row["task_id"]] = (line, row)
    return tasks


def load_completions(path: str, tasks: dict) -> list[tuple[int, dict]]:
    rows = read_rows(path, ["task_id", "completion"])
    for line, row in rows:
        if not isinstance(row["completion"], str):
            raise DataError(f"{path}:{line}: `completion` must be text, got {type(row['completion']).__name__}")
        if row["task_id"] not in tasks:
            raise DataError(f"{path}:{line}: task_id {row['task_id']!r} is not in the tasks file")
    return rows


def verdict_row(row: dict, verdict) -> dict:
    details = verdict.details
    out = {**row, "reward": verdict.reward, "status": verdict.status.value}
    for key in ("passed", "n_tests", "first_failure", "reason"):
        if key in details:
            out[key] = details[key]
    return out


def summary(samples: dict[str, list[bool]], statuses: Counter) -> str:
    counts = sorted({len(v) for v in samples.values()})
    fewest = counts[0]
    ks = [k for k in (1, 2, 5, 10, 20, 50, 100) if k <= fewest]
    lines = [
        f"{sum(statuses.values())} completions of {len(samples)} tasks "
        f"({fewest}{'' if len(counts) == 1 else f'-{counts[-1]}'} per task): "
        + ", ".join(f"{status} {n}" for status, n in statuses.most_common())
    ]
    for k in ks:
        value = sum(pass_at_k(len(v), sum(v), k) for v in samples.values()) / len(samples)
        lines.append(f"pass@{k} = {value:.4f}")
    return "\n".join(lines)


def score_files(args: dict, reward) -> dict:
    tasks = load_tasks(args["tasks"], reward)
    completions = load_completions(args["completions"], tasks)
    samples: dict[str, list[bool]] = {task_id: [] for task_id in tasks}
    statuses: Counter = Counter()
    out = Path(args["out"])
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for start in range(0, len(completions), CHUNK):
            chunk = [row for _, row in completions[start : start + CHUNK]]
            verdicts = reward([row["completion"] for row in chunk], [tasks[row["task_id"]][1] for row in chunk])
            for row, verdict in zip(chunk, verdicts, strict=True):
                handle.write(json.dumps(verdict_row(row, verdict), default=str) + "\n")
                samples[row["task_id"]].append(verdict.status.value == "PASS")
                statuses[verdict.status.value] += 1
    scored = {task_id: v for task_id, v in samples.items() if v}
    return {"summary": summary(scored, statuses) + f"\nverdicts: {out}"}
