"""A tiny offline stand-in for a hub chat model (Qwen2, byte-level BPE, ChatML template), built once per
session, and a copy whose tokenizer has no chat template (a base model's)."""

from __future__ import annotations

import shutil

import pytest

from rlx.models.synthetic import build_model_dir


@pytest.fixture(scope="session")
def chat_model_dir(tmp_path_factory):
    return build_model_dir(tmp_path_factory.mktemp("synthetic") / "chat", arch="qwen2", hidden=64, layers=2, heads=4,
                           vocab=2000, corpus_lines=3000)


@pytest.fixture(scope="session")
def base_model_dir(chat_model_dir, tmp_path_factory):
    from transformers import AutoTokenizer

    target = tmp_path_factory.mktemp("synthetic") / "base"
    shutil.copytree(chat_model_dir, target)
    tokenizer = AutoTokenizer.from_pretrained(target, local_files_only=True)
    tokenizer.chat_template = None
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        (target / name).unlink(missing_ok=True)
    tokenizer.save_pretrained(target)
    assert AutoTokenizer.from_pretrained(target, local_files_only=True).chat_template is None
    return target
