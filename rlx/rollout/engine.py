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
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from rlx.rollout.cache import SlotCache
from rlx.rollout.generation import (
    Generation,
    GenerationRequest,
    OnFinished,
    decode_finished,
    decode_texts,
    request_ids,
    response_layout,
)
from rlx.rollout.sampling import sample_tokens, workspace
from rlx.rollout.staleness import check_max_staleness
from rlx.rollout.turn_cache import TurnCache, TurnCall

log = logging.getLogger(__name__)


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
