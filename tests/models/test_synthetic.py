"""The offline stand-in for a hub model: a Qwen2 directory with a trained byte-level BPE tokenizer and a chat
template, loadable by the Auto classes, whose tokenizer round-trips text exactly (ENV.md's pitfall: a Qwen2
config once got a tokenizer that silently dropped spaces)."""

from __future__ import annotations

import json

from transformers import AutoModelForCausalLM, AutoTokenizer

from rlx.models.synthetic import build_model_dir


def test_synthetic_qwen2_round_trips_text_and_renders_chat(tmp_path):
    path = build_model_dir(tmp_path / "m", arch="qwen2", hidden=64, layers=2, heads=4, vocab=2000,
                           corpus_lines=3000)
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    text = "Hello  world 12+34=46\n def f(x):\n\treturn (x+3)*2"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    assert tok.padding_side == "left" and tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    rendered = tok.apply_chat_template([{"role": "user", "content": "2+2?"}], tokenize=False,
                                       add_generation_prompt=True)
    assert rendered == "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert model.config.vocab_size == 2000 and model.config.eos_token_id == tok.eos_token_id
    meta = json.loads((path / "synthetic.json").read_text())
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
