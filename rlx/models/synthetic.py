"""Offline stand-ins for real models: a Qwen2- or Llama-architecture causal LM built from a transformers
config, with a byte-level BPE tokenizer trained here by `tokenizers` and a ChatML chat template, saved with
`save_pretrained` so that it loads through `model=hf` exactly as a hub checkpoint would.

There is no model hub on this machine or in CI, so the real-model code paths (chat data, LoRA, micro-batching,
the rollout engine at a real vocabulary size) are tested and benchmarked on these. The weights are random:
what they show is memory and speed at a real shape, and that the code runs, not that anything is learnt.

    python -m rlx.models.synthetic /tmp/qwen48m --arch qwen2 --hidden 512 --layers 8 --vocab 32000
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

# ChatML, as Qwen2's instruct models use it; generation prompts end with the assistant header.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PAD, EOS = "<|endoftext|>", "<|im_end|>"


def synthetic_corpus(lines: int, seed: int) -> list[str]:
    """Pseudo-text with many distinct words (so BPE learns tens of thousands of merges) plus digits,
    arithmetic and code-like lines (so the tasks rlx bundles tokenize into short, sensible pieces)."""
    rng = random.Random(seed)
    syllables = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiouy"] + list("aeiou")
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(60_000)]
    out = []
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.6:
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(4, 16))).capitalize() + ".")
        elif kind < 0.8:
            a, b = rng.randint(0, 9999), rng.randint(0, 9999)
            out.append(f"{a}+{b}={a + b} and {a}*{b} is {a * b}")
        else:
            name = rng.choice(words)
            out.append(f"def {name}(x):\n    return (x+{rng.randint(1, 9)})*{rng.randint(2, 9)}")
    return out


def train_tokenizer(vocab_size: int, corpus: list[str], chat_template: bool = True) -> PreTrainedTokenizerFast:
    core = Tokenizer(models.BPE(unk_token=None))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token=EOS, pad_token=PAD, padding_side="left",
                                   chat_template=CHAT_TEMPLATE if chat_template else None,
                                   clean_up_tokenization_spaces=False)


def build_model_dir(path: str | Path, arch: str = "qwen2", hidden: int = 512, layers: int = 8, heads: int = 8,
                    kv_heads: int | None = None, intermediate: int | None = None, vocab: int = 32000,
                    max_positions: int = 2048, corpus_lines: int = 60_000, seed: int = 0,
                    tie_embeddings: bool = True, chat_template: bool = True) -> Path:
    """Write a random-init `arch` model and its trained tokenizer to `path`; returns `path`.
    `chat_template=False` leaves the tokenizer without one (a base model's, which cannot render messages).

    The model's vocabulary is `vocab` rows even when the corpus yields fewer BPE tokens (the unused rows
    are never sampled from a trained model, and the [N, T, V] logits then have the real width).
    """
    path = Path(path)
    tokenizer = train_tokenizer(vocab, synthetic_corpus(corpus_lines, seed), chat_template)
    config = AutoConfig.for_model(
        arch, vocab_size=max(vocab, len(tokenizer)), hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads or heads,
        intermediate_size=intermediate or 4 * hidden, max_position_embeddings=max_positions,
        tie_word_embeddings=tie_embeddings, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    params = sum(p.numel() for p in model.parameters())
    (path / "synthetic.json").write_text(json.dumps({"arch": arch, "parameters": params, "tokens": len(tokenizer),
                                                     "seed": seed}, indent=1))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--arch", default="qwen2", choices=["qwen2", "llama"])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = build_model_dir(args.path, args.arch, args.hidden, args.layers, args.heads, vocab=args.vocab, seed=args.seed)
    print(json.loads((out / "synthetic.json").read_text()))


if __name__ == "__main__":
    main()
