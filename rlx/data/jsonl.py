"""Your own prompts: JSON Lines files, one row per line.

Every row must carry the fields the reward reads (`required_fields`). A row that is not valid JSON, not an
object, or lacks a field stops the run at start with the file and line number, never mid-training.
An optional `warm_start_file` holds rows with `prompt` and `completion` for a supervised warm start.
"""

from __future__ import annotations

import json
from pathlib import Path

from rlx.data.task import Task


class DataError(ValueError):
    pass


def read_rows(path: str | Path, required_fields: list[str]) -> list[dict]:
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
            rows.append(row)
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


class JsonlTask(Task):
    def __init__(
        self,
        train_file: str,
        val_file: str,
        required_fields: list[str],
        max_new_tokens: int,
        warm_start_file: str | None = None,
    ) -> None:
        fields = ["prompt", *[f for f in required_fields if f != "prompt"]]
        self.train = read_rows(train_file, fields)
        self.val = read_rows(val_file, fields)
        self.max_new_tokens = max_new_tokens
        self.warm_start_file = warm_start_file

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        if self.warm_start_file is None:
            return super().warm_start_examples(count, seed)
        rows = read_rows(self.warm_start_file, ["prompt", "completion"])
        return [(row["prompt"], row["completion"]) for row in (rows * (count // len(rows) + 1))[:count]]

    def fingerprint(self) -> dict:
        return {"task": "jsonl", "warm_start_file": str(self.warm_start_file)}
