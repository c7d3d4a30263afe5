"""Conversational prompts (TRL's format): checked at start with the file and line, rendered once with the
tokenizer's chat template after the model loads (messages kept in the row), and a clear start-up error when
the tokenizer has no template."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from rlx.data.jsonl import DataError, JsonlTask
from rlx.data.task import prompt_problem
from rlx.errors import ConfigError

CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+3?"}]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def jsonl_task(tmp_path, rows):
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    val = write_jsonl(tmp_path / "val.jsonl", rows[:1])
    return JsonlTask(str(train), str(val), max_new_tokens=8, warm_start_file=None)


def test_prompt_shapes():
    assert prompt_problem("12+3=") is None and prompt_problem(CHAT) is None
    assert "got int" in prompt_problem(7)
    assert "empty list" in prompt_problem([])
    assert "message 1 must be an object with string `role` and `content`" in prompt_problem(
        [{"role": "user", "content": "a"}, {"role": "user"}])


def test_malformed_conversation_fails_at_start_with_file_and_line(tmp_path):
    rows = [{"prompt": CHAT, "answer": "5"}, {"prompt": [{"content": "hi"}], "answer": "1"}]
    with pytest.raises(DataError, match=rf"{tmp_path / 'train.jsonl'}:2: `prompt` message 0 must be"):
        jsonl_task(tmp_path, rows)


def test_render_prompts_uses_the_chat_template_once_and_keeps_the_messages(tmp_path, chat_model_dir):
    task = jsonl_task(tmp_path, [{"prompt": CHAT, "answer": "5"}, {"prompt": "plain text", "answer": "1"},
                                 {"prompt": [*CHAT, {"role": "assistant", "content": "It is"}], "answer": "5"}])
    assert task.conversational
    tokenizer = AutoTokenizer.from_pretrained(chat_model_dir, local_files_only=True)
    task.render_prompts(tokenizer)
    first, plain, prefilled = task.train
    assert first["prompt"] == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+3?<|im_end|>\n"
                               "<|im_start|>assistant\n")  # ChatML with the generation prompt
    assert first["prompt_messages"] == CHAT and first["answer"] == "5"
    assert plain == {"prompt": "plain text", "answer": "1"}  # text prompts are left alone
    # a final assistant turn is continued, not closed (TRL's continue_final_message)
    assert prefilled["prompt"].endswith("<|im_start|>assistant\nIt is")
    assert task.val[0]["prompt"] == first["prompt"]
    task.render_prompts(tokenizer)  # idempotent: rendered prompts are text now
    assert task.train[0]["prompt"] == first["prompt"] and not task.conversational


def test_a_tokenizer_without_a_chat_template_fails_clearly(tmp_path, base_model_dir):
    task = jsonl_task(tmp_path, [{"prompt": CHAT, "answer": "5"}])
    tokenizer = AutoTokenizer.from_pretrained(base_model_dir, local_files_only=True)
    with pytest.raises(ConfigError, match=rf"2 prompts are conversations .*{tmp_path / 'train.jsonl'}:1.*"
                                          r"has no chat template.*Use a chat/instruct model"):
        task.render_prompts(tokenizer)


def test_warm_start_rows_must_be_text(tmp_path):
    warm = write_jsonl(tmp_path / "warm.jsonl", [{"prompt": "1+1=", "completion": "2"},
                                                 {"prompt": CHAT, "completion": "5"}])
    task = jsonl_task(tmp_path, [{"prompt": "1+1=", "answer": "2"}])
    task.warm_start_file = str(warm)
    with pytest.raises(DataError, match=rf"{warm}:2: a warm-start row's prompt and completion must be text"):
        task.warm_start_examples(4, seed=0)
