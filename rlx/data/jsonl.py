"""Your own prompts: JSON Lines files, one row per line.

Files ending in `.gz` are read through gzip. `columns` renames a file's fields to rlx's (`{prompt: text}` for
MBPP's `text`); `row_defaults` adds fields to every row that lacks them: a dataset-wide setting of a per-row
option, e.g. `{code_from: prompt_completion}` for HumanEval (docs/code_datasets.md).
Every row must carry the fields the reward reads (`required_fields`) and a `prompt` that is text or a
conversation (TRL's format: `[{"role": "user", "content": "..."}]`, rendered with the model's chat template).
A row that is not valid JSON, not an object, lacks a field or has a malformed prompt stops the run at start
with the file and line number, never mid-training.
An optional `warm_start_file` holds rows with `prompt` and `completion` for a supervised warm start.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from rlx.data.task import Task, check_overlong_choice, prompt_problem
from rlx.errors import RlxError


class DataError(RlxError):
    pass


def read_rows(path: str | Path, required_fields: list[str], columns: dict | None = None) -> list[tuple[int, dict]]:
    """(line number, row) for each non-blank line; raises DataError naming the file and line. columns: a file
    field -> rlx field renaming, applied before `prompt` (always required with a renaming) is checked."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"data file not found: {path} (set data.train_file / data.val_file to existing .jsonl files)")
    rows = []
    opener = gzip.open if path.suffix == ".gz" else open  # HumanEval.jsonl.gz is read as published
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in _lines(handle, path):
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
            if columns is not None:
                row = {columns.get(k, k): v for k, v in row.items()}
                if "prompt" not in row:
                    raise DataError(
                        f"{path}:{line_no}: row has no `prompt` (fields: {sorted(row)}); name the prompt field "
                        "with data.columns, e.g. data.columns={prompt: text}"
                    )
            problem = prompt_problem(row["prompt"]) if "prompt" in row else None
            if problem:
                raise DataError(f"{path}:{line_no}: {problem}")
            rows.append((line_no, row))
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def _lines(handle, path: Path):
    """(line number, text); a file that is not UTF-8 text (or a broken .gz) is a DataError, not a traceback."""
    line_no = 0
    try:
        for line_no, line in enumerate(handle, start=1):
            yield line_no, line
    except (UnicodeDecodeError, OSError, EOFError) as err:
        raise DataError(f"{path}:{line_no + 1}: cannot be read as UTF-8 JSON Lines ({err})") from None


class JsonlTask(Task):
    def __init__(
        self,
        train_file: str,
        val_file: str,
        max_new_tokens: int,
        warm_start_file: str | None,
        columns: dict | None = None,
        row_defaults: dict | None = None,
        overlong_prompts: str = "stop",
    ) -> None:
        self.overlong_prompts = check_overlong_choice(overlong_prompts)
        self.files = {"train": Path(train_file).expanduser(), "val": Path(val_file).expanduser()}
        renamed = {str(column): str(field) for field, column in dict(columns or {}).items()}
        defaults = dict(row_defaults or {})
        self.lines = {
            split: [(line, {**defaults, **row}) for line, row in read_rows(path, [], columns=renamed)]
            for split, path in self.files.items()
        }
        self.train = [row for _, row in self.lines["train"]]
        self.val = [row for _, row in self.lines["val"]]
        self.max_new_tokens = max_new_tokens
        self.warm_start_file = warm_start_file

    def check_fields(self, fields: tuple[str, ...]) -> None:
        for split, numbered in self.lines.items():
            for line_no, row in numbered:
                missing = [f for f in fields if f not in row]
                if missing:
                    raise DataError(
                        f"{self.files[split]}:{line_no}: row is missing field(s) {missing} that the "
                        f"reward needs (fields present: {sorted(row)})"
                    )

    def _where(self, split: str, index: int) -> str:
        return f"{self.files[split]}:{self.lines[split][index][0]}"

    def drop_rows(self, split: str, indices: set[int]) -> None:
        super().drop_rows(split, indices)
        self.lines[split] = [line for i, line in enumerate(self.lines[split]) if i not in indices]

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
            raise DataError(
                f"{path}:{line_no}: a warm-start row's prompt and completion must be text (the "
                "character-level warm start has no chat template)"
            )
    rows = [row for _, row in numbered]
    return [(row["prompt"], row["completion"]) for row in (rows * (count // len(rows) + 1))[:count]]


def file_sha256(path: str | None) -> str | None:
    return None if path is None else hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()
