"""data=hf_dataset reads local datasets only: a parquet file (or files per split), a save_to_disk directory;
columns are mapped to rlx's fields, and a missing split, column or field stops the run at start by name."""

from __future__ import annotations

import pytest

from rlx.data.hf_dataset import HfDatasetTask
from rlx.data.jsonl import DataError

ROWS = {"question": ["1+1?", "2+2?", "3+3?"], "final": ["2", "4", "6"], "source": ["a", "b", "c"]}
CHAT = {"question": [[{"role": "user", "content": "5+5?"}]], "final": ["10"]}


def task(**kwargs) -> HfDatasetTask:
    args = {"path": None, "data_files": None, "split": "train", "val_split": "test",
            "columns": {"prompt": "question", "answer": "final"}, "max_new_tokens": 16, "warm_start_file": None}
    return HfDatasetTask(**{**args, **kwargs})


@pytest.fixture
def splits():
    from datasets import Dataset, DatasetDict

    return DatasetDict({"train": Dataset.from_dict(ROWS), "test": Dataset.from_dict(CHAT)})


def test_parquet_files_per_split_with_a_column_mapping(tmp_path, splits):
    splits["train"].to_parquet(tmp_path / "train.parquet")
    splits["test"].to_parquet(tmp_path / "test.parquet")
    files = {"train": str(tmp_path / "train.parquet"), "test": str(tmp_path / "test.parquet")}
    t = task(data_files=files)
    assert t.train == [{"prompt": "1+1?", "answer": "2", "source": "a"}, {"prompt": "2+2?", "answer": "4", "source": "b"},
                       {"prompt": "3+3?", "answer": "6", "source": "c"}]
    t.check_fields(("answer",))
    # the held-out split's conversational prompt survives parquet as a list of messages
    assert t.val == [{"prompt": [{"role": "user", "content": "5+5?"}], "answer": "10"}] and t.conversational
    with pytest.raises(DataError, match=rf"{tmp_path / 'test.parquet'} split 'test' row 0 is missing field"):
        t.check_fields(("source",))


def test_save_to_disk_directory(tmp_path, splits):
    from datasets import Dataset

    splits["test"] = Dataset.from_dict({"question": ["9+1?"], "final": ["10"], "source": ["d"]})
    splits.save_to_disk(tmp_path / "ds")
    t = task(path=str(tmp_path / "ds"))
    assert [r["prompt"] for r in t.train] == ROWS["question"] and t.val == [{"prompt": "9+1?", "answer": "10",
                                                                            "source": "d"}]
    with pytest.raises(DataError, match=r"has no split 'validation' \(data.val_split\); its splits are \['test', 'train'\]"):
        task(path=str(tmp_path / "ds"), val_split="validation")
    with pytest.raises(DataError, match=r"data.columns maps prompt to column 'query', but .* has columns"):
        task(path=str(tmp_path / "ds"), columns={"prompt": "query"})
    with pytest.raises(DataError, match=r"split 'train' row 0 has no `prompt`.*data.columns=\{prompt: question\}"):
        task(path=str(tmp_path / "ds"), columns={})
    with pytest.raises(DataError, match=r"split 'train' row 0 is missing field\(s\) \['tests'\] that the reward needs"):
        task(path=str(tmp_path / "ds")).check_fields(("tests",))


def test_one_file_is_split_train_and_bad_sources_are_named(tmp_path, splits):
    splits["train"].to_json(tmp_path / "rows.jsonl")
    with pytest.raises(DataError, match=r"has no split 'test' \(data.val_split\); its splits are \['train'\]"):
        task(data_files=str(tmp_path / "rows.jsonl"))
    with pytest.raises(DataError, match="exactly one of data.path"):
        task()
    with pytest.raises(DataError, match="is not a file"):
        task(data_files={"train": str(tmp_path / "missing.parquet"), "test": str(tmp_path / "rows.jsonl")})
    with pytest.raises(DataError, match="is not a save_to_disk directory"):
        task(path=str(tmp_path))
    with pytest.raises(DataError, match="data.split and data.val_split are both 'train'"):
        task(data_files=str(tmp_path / "rows.jsonl"), val_split="train")
