"""Small random-init models the rollout tests share: the tiny Llama with rlx's character tokenizer (init std
0.2, so its logits are far from uniform and sampling differences would show), and a Qwen2 with grouped-query
attention (4 heads, 2 key/value heads) and a trained byte-level BPE tokenizer; and a sampler whose finishes are
scripted."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import rlx.rollout.engine as engine_module
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
    path = build_model_dir(
        tmp_path_factory.mktemp("qwen2"),
        arch="qwen2",
        hidden=64,
        layers=2,
        heads=4,
        kv_heads=2,
        vocab=400,
        corpus_lines=2000,
    )
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    for p in model.parameters():  # a larger scale than the default init, so that logits are peaked
        p.data.mul_(4.0)
    return model, tok


@pytest.fixture(params=["llama", "qwen2"])
def model_and_tokenizer(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def scripted_finishes(monkeypatch):
    """`scripted_finishes(tok, {step: [slots]})`: the engine samples as usual but never eos, except the listed
    decode slots at the listed steps; each log-prob is that of the token emitted. Returns the step counter
    (`step[0] = 0` replays the script)."""

    def install(tok, script: dict[int, list[int]]) -> list[int]:
        eos, other = tok.eos_token_id, tok.convert_tokens_to_ids("x")
        sample, step = engine_module.sample_tokens, [0]

        def scripted(logits, temperature, greedy, out=None):
            token, _, entropy = sample(logits, temperature, greedy, out)
            token[token == eos] = other
            token[script.get(step[0], [])] = eos
            step[0] += 1
            scores = logits.float() / temperature  # the log-prob of the token actually emitted
            return token, scores.gather(-1, token[:, None]).squeeze(-1) - torch.logsumexp(scores, -1), entropy

        monkeypatch.setattr(engine_module, "sample_tokens", scripted)
        return step

    return install
