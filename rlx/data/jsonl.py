"""Your own prompts: JSON Lines files, one row per line.

Every row must carry the fields the reward reads (`required_fields`) and a `prompt` that is text or a
conversation (TRL's format: `[{"role": "user", "content": "..."}]`, rendered with the model's chat template).
A row that is not valid JSON, not an object, lacks a field or has a malformed prompt stops the run at start
with the file and line number, never mid-training.
An optional `warm_start_file` holds rows with `prompt` and `completion` for a supervised warm start.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rlx.data.task import Task, prompt_problem
from rlx.errors import RlxError


class DataError(RlxError):
    pass


def read_rows(path: str | Path, required_fields: list[str]) -> list[tuple[int, dict]]:
    """(line number, row) for each non-blank line; raises DataError naming the file and line."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"data file not found: {path} (set data.train_file / data.val_file to existing .jsonl files)")
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{line_no}: not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{line_no}: each line must be a JSON object, got {type(row).__name__}")
            missing = [field for field in required_fields if field not in row]
            if missing:
                raise DataError(
                    f"{path}:{line_no}: row is missing field(s) {missing}; every row needs {required_fields} "
                    f"(fields present: {sorted(row)})"
                )
            problem = prompt_problem(row["prompt"]) if "prompt" in row else None
            if problem:
                raise DataError(f"{path}:{line_no}: {problem}")
            rows.append((line_no, row))
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


class JsonlTask(Task):
    def __init__(self, train_file: str, val_file: str, max_new_tokens: int, warm_start_file: str | None) -> None:
        self.files = {"train": Path(train_file).expanduser(), "val": Path(val_file).expanduser()}
        self.lines = {split: read_rows(path, ["prompt"]) for split, path in self.files.items()}
        self.train = [row for _, row in self.lines["train"]]
        self.val = [row for _, row in self.lines["val"]]
        self.max_new_tokens = max_new_tokens
        self.warm_start_file = warm_start_file

    def check_fields(self, fields: tuple[str, ...]) -> None:
        for split, numbered in self.lines.items():
            for line_no, row in numbered:
                missing = [f for f in fields if f not in row]
                if missing:
                    raise DataError(f"{self.files[split]}:{line_no}: row is missing field(s) {missing} that the "
                                    f"reward needs (fields present: {sorted(row)})")

    def _where(self, split: str, index: int) -> str:
        return f"{self.files[split]}:{self.lines[split][index][0]}"

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        if self.warm_start_file is None:
            return super().warm_start_examples(count, seed)
        return warm_start_pairs(self.warm_start_file, count)

    def fingerprint(self) -> dict:
        return {"task": "jsonl", "warm_start_sha256": file_sha256(self.warm_start_file)}


def warm_start_pairs(path: str, count: int) -> list[tuple[str, str]]:
    """`count` (prompt, completion) pairs from a warm-start JSONL file, cycling through its rows."""
    numbered = read_rows(path, ["prompt", "completion"])
    for line_no, row in numbered:
        if not (isinstance(row["prompt"], str) and isinstance(row["completion"], str)):
            raise DataError(f"{path}:{line_no}: a warm-start row's prompt and completion must be text (the "
                            "character-level warm start has no chat template)")
    rows = [row for _, row in numbered]
    return [(row["prompt"], row["completion"]) for row in (rows * (count // len(rows) + 1))[:count]]


def file_sha256(path: str | None) -> str | None:
    return None if path is None else hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()
