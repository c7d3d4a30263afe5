"""Small random-init models the rollout tests share: the tiny Llama with rlx's character tokenizer (init std
0.2, so its logits are far from uniform and sampling differences would show), and a Qwen2 with grouped-query
attention (4 heads, 2 key/value heads) and a trained byte-level BPE tokenizer."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlx.models.synthetic import build_model_dir
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer

PROMPTS = ["12+34=", "5+6=", "99+1=", "7+77="]  # different lengths: the batch is left-padded


@pytest.fixture(scope="session")
def llama():
    tok = build_char_tokenizer()
    tok.padding_side = "left"
    return build_tiny_llama(tok, 64, 2, 4, 128, 64, 0.2, seed=0).eval(), tok


@pytest.fixture(scope="session")
def qwen2(tmp_path_factory):
    path = build_model_dir(tmp_path_factory.mktemp("qwen2"), arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2,
                           vocab=400, corpus_lines=2000)
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    for p in model.parameters():  # a larger scale than the default init, so that logits are peaked
        p.data.mul_(4.0)
    return model, tok


@pytest.fixture(params=["llama", "qwen2"])
def model_and_tokenizer(request):
    return request.getfixturevalue(request.param)
