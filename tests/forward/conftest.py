"""Small random-init models and a batch of uneven rows that the padding-free forward tests share: a Llama with
rlx's character vocabulary and a Qwen2 with grouped-query attention and biased projections, both with a large
init (std 0.2) so that log-probs are peaked and far from uniform; rows are left-padded prompts of 2-5 tokens
(groups of three share one) and completions of 1-8 tokens, some with an observation span (a multi-turn
environment's reply: response_mask 0, attention_mask 1) inside."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import Tensor
from transformers import Qwen2Config, Qwen2ForCausalLM

from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer


@dataclass(frozen=True)
class Rows:
    input_ids: Tensor  # [N, P + T]
    attention_mask: Tensor  # [N, P + T]
    response_mask: Tensor  # [N, T] 0 on padding and on observation tokens
    group: Tensor  # [N]

    @property
    def width(self) -> int:
        return self.response_mask.shape[1]


def uneven_rows(vocab: int, shared: bool, observations: bool = True, seed: int = 0) -> Rows:
    """3 prompts × 3 completions (or 9 distinct prompts): prompts of 2-5 tokens left-padded to 5, completions of
    1-8 tokens right-padded to 8; with `observations`, rows 3, 4 and 7 carry an observation between the model's
    tokens (the environment's reply in a multi-turn episode)."""
    g = torch.Generator().manual_seed(seed)
    prompt_lengths, completion_lengths = [2, 5, 3], [8, 3, 1, 6, 8, 2, 5, 7, 4]
    width_p, width_t = 5, 8
    ids = torch.zeros(9, width_p + width_t, dtype=torch.long)
    mask = torch.zeros_like(ids)
    response = torch.zeros(9, width_t, dtype=torch.long)
    prompts = [torch.randint(4, vocab, (length,), generator=g) for length in prompt_lengths]
    for row, length in enumerate(completion_lengths):
        prompt = prompts[row // 3] if shared else torch.randint(4, vocab, (prompt_lengths[row % 3],), generator=g)
        ids[row, width_p - len(prompt) : width_p] = prompt
        mask[row, width_p - len(prompt) : width_p] = 1
        ids[row, width_p : width_p + length] = torch.randint(4, vocab, (length,), generator=g)
        mask[row, width_p : width_p + length] = 1
        response[row, :length] = 1
    if observations:
        response[3, 3:4] = 0
        response[4, 2:5] = 0
        response[7, 1:3] = 0
    return Rows(ids, mask, response, torch.arange(9) // 3)


@pytest.fixture(scope="session")
def llama():
    tok = build_char_tokenizer()
    return build_tiny_llama(tok, 64, 2, 4, 128, 64, 0.2, seed=0).eval()


@pytest.fixture(scope="session")
def qwen2():
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=96,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        intermediate_size=128,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        initializer_range=0.2,
    )
    return Qwen2ForCausalLM(config).eval()


@pytest.fixture(params=["llama", "qwen2"])
def model(request):
    return request.getfixturevalue(request.param)
