"""Bad input fails at start with a message naming the key (or file and line) and the fix."""

from __future__ import annotations

import json

import pytest

from rlx.checks import ConfigError
from rlx.data.jsonl import DataError
from rlx.models.loading import ModelError
from rlx.train import build


def test_grpo_refuses_group_of_one(cfg_factory):
    with pytest.raises(ConfigError, match=r"algo.group_size >= 2 \(got 1\).*algo.group_size=8"):
        build(cfg_factory("algo.group_size=1"))


def test_reinforce_style_loss_refuses_several_updates(cfg_factory):
    cfg = cfg_factory("algo.update_epochs=2", "policy_loss=reinforce")
    with pytest.raises(ConfigError, match="algo.update_epochs=2"):
        build(cfg)


def test_data_file_missing_field_names_file_and_line(cfg_factory, tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"prompt": "1+1=", "answer": "2"}) + "\n" + json.dumps({"prompt": "2+2="}) + "\n")
    val = tmp_path / "val.jsonl"
    val.write_text(json.dumps({"prompt": "3+3=", "answer": "6"}) + "\n")
    cfg = cfg_factory("data=jsonl", f"data.train_file={train}", f"data.val_file={val}")
    with pytest.raises(DataError, match=rf"{train}:2: row is missing field\(s\) \['answer'\]"):
        build(cfg)


def test_data_file_bad_json_names_file_and_line(cfg_factory, tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text('{"prompt": "1+1=", "answer": "2"}\n\n{"prompt": oops}\n')
    cfg = cfg_factory("data=jsonl", f"data.train_file={train}", f"data.val_file={train}")
    with pytest.raises(DataError, match=rf"{train}:3: not valid JSON"):
        build(cfg)


def test_model_directory_without_tokenizer(cfg_factory, tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="has no tokenizer.*tokenizer.save_pretrained"):
        build(cfg_factory("model=hf", f"model.name_or_path={tmp_path / 'model'}"))


def test_model_directory_that_is_not_a_model(cfg_factory, tmp_path):
    with pytest.raises(ModelError, match="not a model directory"):
        build(cfg_factory("model=hf", f"model.name_or_path={tmp_path}"))
