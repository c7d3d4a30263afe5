"""The warm start's gate, `greedy_match_rate`, checks greedy decoding with one teacher-forced forward pass: it
must say what decoding itself says, on completions that end at eos, at the max_new_tokens cap, or past it."""

from __future__ import annotations

import torch

from rlx.models.tiny import build_tiny_llama, greedy_match_rate
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rollout.generate import generate

PROMPTS = ["a=1\n", "b=22\n", "# add 3\n", "x", "def f(x):\n", "12+7=", "zz", "q: 40\n"]
CAP = 24


def model_and_tokenizer():
    tokenizer = build_char_tokenizer()
    model = build_tiny_llama(
        tokenizer, hidden_size=32, layers=2, heads=2, intermediate_size=64, max_positions=128, init_std=0.2, seed=0
    ).eval()
    with torch.no_grad():  # eos outbids the model's favourite character, so some greedy answers end early
        logits = model(**tokenizer(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)).logits
        favourite = int(logits[:, -1].argmax(-1).mode().values)
        model.lm_head.weight[tokenizer.eos_token_id] = 1.05 * model.lm_head.weight[favourite]
    return model, tokenizer


def decoded_rate(model, tokenizer, examples, cap):
    texts = generate(model, tokenizer, [p for p, _ in examples], cap, 1.0, greedy=True).texts
    return sum(t == c for t, (_, c) in zip(texts, examples, strict=True)) / len(examples)


def test_teacher_forced_greedy_match_agrees_with_decoding():
    model, tokenizer = model_and_tokenizer()
    own = generate(model, tokenizer, PROMPTS, CAP, 1.0, greedy=True)
    kept = [(p, a) for p, a in zip(PROMPTS, own.texts, strict=True) if a]  # "one less" of "" would still be ""
    lengths = [len(tokenizer.encode(a, add_special_tokens=False)) for _, a in kept]
    assert any(n < CAP for n in lengths) and CAP in lengths  # answers stopped by eos, and answers cut at the cap
    prompts, answers = [p for p, _ in kept], [a for _, a in kept]
    variants = {
        "own answers": ([(p, a) for p, a in zip(prompts, answers, strict=True)], CAP, 1.0),
        "one character more": ([(p, a + "a") for p, a in zip(prompts, answers, strict=True)], CAP, 0.0),
        "one character less (needs eos early)": (
            [(p, a[:-1]) for p, a in zip(prompts, answers, strict=True)],
            CAP,
            0.0,
        ),
        "first character changed": (
            [(p, ("b" if a[:1] == "a" else "a") + a[1:]) for p, a in zip(prompts, answers, strict=True)],
            CAP,
            0.0,
        ),
        "cap shorter than every answer": ([(p, a) for p, a in zip(prompts, answers, strict=True)], 1, 0.0),
    }
    for name, (examples, cap, expected) in variants.items():
        assert greedy_match_rate(model, tokenizer, examples, cap, chunk=3) == expected, name
        assert decoded_rate(model, tokenizer, examples, cap) == expected, name
    # a mix, in chunks that split it unevenly: the same share as decoding
    mixed = [*variants["own answers"][0][:4], *variants["one character more"][0][4:]]
    share = 4 / len(mixed)
    assert (
        greedy_match_rate(model, tokenizer, mixed, CAP, chunk=3) == decoded_rate(model, tokenizer, mixed, CAP) == share
    )
