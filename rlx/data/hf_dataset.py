"""data=hf_dataset: a local Hugging Face dataset, never downloaded.

Either `path`, a directory written by `save_to_disk` (a `DatasetDict` with its splits, or one `Dataset`,
which is split "train"), or `data_files`, files per split as `datasets.load_dataset` takes them
(`{train: train.parquet, test: test.parquet}`; one file or a list of files without a mapping is split
"train"), read by datasets' packaged parquet/json/csv builders. `columns` maps rlx's field names to the
dataset's (`{prompt: question}`); other columns pass through to the reward. Rows are checked at start like
data=jsonl's: a missing split, column or field, or a malformed prompt, names the source, split and row.
Conversational prompts (lists of messages) are rendered with the model's chat template (see rlx.data.task).
"""

from __future__ import annotations

import os
from pathlib import Path

from rlx.data.jsonl import DataError, file_sha256, warm_start_pairs
from rlx.data.task import Task, check_overlong_choice, prompt_problem

BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}


def _datasets():
    """The datasets library with the hub switched off: any attempt to reach it fails instead of downloading."""
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    # deferred: datasets reads HF_HUB_OFFLINE when imported; it is set just above
    import datasets

    datasets.config.HF_DATASETS_OFFLINE = True
    datasets.config.HF_HUB_OFFLINE = True
    return datasets


def _files(spec) -> list[Path]:
    files = [Path(f).expanduser() for f in ([spec] if isinstance(spec, (str, Path)) else spec)]
    for file in files:
        if not file.is_file():
            raise DataError(f"data.data_files: {file} is not a file")
        if file.suffix not in BUILDERS:
            raise DataError(
                f"data.data_files: {file} is not one of {sorted(BUILDERS)}; convert it, or save the "
                "dataset with save_to_disk and set data.path"
            )
    if len({BUILDERS[f.suffix] for f in files}) > 1:
        raise DataError(f"data.data_files mixes formats within one split: {[str(f) for f in files]}")
    return files


def load_splits(path: str | None, data_files) -> tuple[str, dict[str, tuple[str, object]]]:
    """(the source's name, {split: (where its rows come from, datasets.Dataset)}) from a save_to_disk
    directory or data files."""
    if (path is None) == (data_files is None):
        raise DataError(
            "data=hf_dataset needs exactly one of data.path (a save_to_disk directory) and "
            f"data.data_files (parquet/json/csv files per split); got path={path!r}, "
            f"data_files={data_files!r}"
        )
    ds = _datasets()
    if path is not None:
        directory = Path(path).expanduser()
        if not directory.is_dir():
            raise DataError(
                f"data.path={directory} is not a directory. Point it at a save_to_disk directory, "
                "or give files with data.data_files"
            )
        try:
            loaded = ds.load_from_disk(str(directory), keep_in_memory=True)
        except FileNotFoundError as err:
            raise DataError(
                f"data.path={directory} is not a save_to_disk directory ({err}). For parquet, "
                "json or csv files use data.data_files"
            ) from None
        if isinstance(loaded, ds.Dataset):
            return str(directory), {"train": (str(directory), loaded)}
        return str(directory), {name: (str(directory), split) for name, split in loaded.items()}
    mapping = data_files if isinstance(data_files, dict) else {"train": data_files}
    splits = {}
    for split, spec in mapping.items():
        files = _files(spec)
        reader = {"parquet": ds.Dataset.from_parquet, "json": ds.Dataset.from_json, "csv": ds.Dataset.from_csv}[
            BUILDERS[files[0].suffix]
        ]
        names = ", ".join(str(f) for f in files)
        try:
            splits[split] = (names, reader([str(f) for f in files], keep_in_memory=True))
        except Exception as err:  # a corrupt or unreadable file: name it, not the library's internals
            raise DataError(f"data.data_files[{split}]: could not read {names}: {err}") from None
    return "data.data_files", splits


class HfDatasetTask(Task):
    def __init__(
        self,
        path: str | None,
        data_files,
        split: str,
        val_split: str,
        columns: dict[str, str],
        max_new_tokens: int,
        warm_start_file: str | None,
        overlong_prompts: str = "stop",
    ) -> None:
        self.overlong_prompts = check_overlong_choice(overlong_prompts)
        source, splits = load_splits(path, data_files)
        if split == val_split:
            raise DataError(
                f"data.split and data.val_split are both {split!r}: the held-out rows would be "
                "trained on. Name two different splits"
            )
        self.rows, self.where = {}, {}
        for role, name in (("train", split), ("val", val_split)):
            if name not in splits:
                key = "data.split" if role == "train" else "data.val_split"
                raise DataError(f"{source} has no split {name!r} ({key}); its splits are {sorted(splits)}")
            self.where[role] = f"{splits[name][0]} split {name!r}"
            self.rows[role] = self._rows(splits[name][1], self.where[role], columns)
        self.train, self.val = self.rows["train"], self.rows["val"]
        self.max_new_tokens = max_new_tokens
        self.warm_start_file = warm_start_file

    @staticmethod
    def _rows(dataset, where: str, columns: dict[str, str]) -> list[dict]:
        present = list(dataset.column_names)
        for field, column in columns.items():
            if column not in present:
                raise DataError(f"data.columns maps {field} to column {column!r}, but {where} has columns {present}")
            if field in present and field != column:
                raise DataError(
                    f"data.columns maps {field} to column {column!r}, but {where} already has a "
                    f"column {field!r}; map that one instead or drop it"
                )
        renamed = {column: field for field, column in columns.items()}
        rows = [{renamed.get(k, k): v for k, v in row.items()} for row in dataset]
        if not rows:
            raise DataError(f"{where} has no rows")
        for i, row in enumerate(rows):
            if "prompt" not in row:
                raise DataError(
                    f"{where} row {i} has no `prompt` (columns: {sorted(row)}); name the prompt "
                    "column with data.columns, e.g. data.columns={prompt: question}"
                )
            problem = prompt_problem(row["prompt"])
            if problem:
                raise DataError(f"{where} row {i}: {problem}")
        return rows

    def check_fields(self, fields: tuple[str, ...]) -> None:
        for role, rows in self.rows.items():
            for i, row in enumerate(rows):
                missing = [f for f in fields if f not in row]
                if missing:
                    raise DataError(
                        f"{self.where[role]} row {i} is missing field(s) {missing} that the reward "
                        f"needs (fields present: {sorted(row)}); map a column to it with data.columns"
                    )

    def _where(self, split: str, index: int) -> str:
        return f"{self.where[split]} row {index}"

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        if self.warm_start_file is None:
            return super().warm_start_examples(count, seed)
        return warm_start_pairs(self.warm_start_file, count)

    def fingerprint(self) -> dict:
        return {"task": "hf_dataset", "warm_start_sha256": file_sha256(self.warm_start_file)}
