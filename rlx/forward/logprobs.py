"""Reading completion log-probs (and other per-token outputs) back from a model, a micro-batch at a time.

Completions are right-aligned after left-padded prompts (see rlx.rollout.batch), so completion token t sits at
column P + t of `input_ids`. Every forward here runs on one micro-batch with its padding trimmed (leading columns
where no row has a prompt token, trailing columns past the micro-batch's longest completion), and the output is
scattered back to [N, T] with 0 on the trimmed positions. Trimming drops only positions that are masked out of
attention, so it changes no real token's output. No float32 [N, T, V] tensor is ever built for a whole batch:
the model's logits exist for one micro-batch, and they are upcast a few rows at a time.

Shapes: N sequences, P prompt columns, T completion columns, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, overload

import torch
from torch import Tensor

from rlx.forward.head import head_logprobs, split_head  # (perf)
from rlx.forward.packing import packed_outputs, packs  # (perf)
from rlx.forward.prefix import shared_prefix_logits, shared_prefix_states  # (perf)


def plan_micro_batches(lengths: Tensor, micro_batch_size: int | None, micro_batch_tokens: int | None) -> list[Tensor]:
    """Split rows 0..N−1 into micro-batches (lists of row indices, every row exactly once).

    - both None: one micro-batch of all rows, in order;
    - micro_batch_size only: consecutive chunks of that many rows;
    - micro_batch_tokens: rows sorted by length and packed greedily so that rows × longest length (the padded
      size of the trimmed micro-batch) stays within the budget (a row longer than the budget goes alone), and no
      micro-batch holds more than micro_batch_size rows when that is set too.

    Args: lengths: [N] real tokens (prompt + completion) of each row.
    """
    n = lengths.shape[0]
    rows = torch.arange(n, device=lengths.device)
    if micro_batch_tokens is None:
        return list(rows.split(micro_batch_size or max(n, 1)))
    order = torch.argsort(lengths, stable=True).tolist()
    out: list[Tensor] = []
    current: list[int] = []
    longest = 0
    for i in order:
        width = max(longest, int(lengths[i]))
        full = micro_batch_size is not None and len(current) >= micro_batch_size
        if current and (width * (len(current) + 1) > micro_batch_tokens or full):
            out.append(torch.tensor(current, dtype=torch.long, device=lengths.device))
            current, width = [], int(lengths[i])
        current.append(i)
        longest = width
    if current:
        out.append(torch.tensor(current, dtype=torch.long, device=lengths.device))
    return out


def trim_padding(input_ids: Tensor, attention_mask: Tensor, response_width: int) -> tuple[Tensor, Tensor, int]:
    """Drop the columns no row of this micro-batch attends to at either end.

    Returns: input_ids [n, P' + T'], attention_mask [n, P' + T'], T' (completion columns kept, ≥ 1).
    """
    prompt_width = input_ids.shape[1] - response_width
    kept_t = int(attention_mask[:, prompt_width:].sum(-1).max().clamp(min=1)) if response_width else 0
    used = attention_mask[:, :prompt_width].any(0).nonzero()  # prompt columns some row uses
    first = int(used[0]) if len(used) else 0
    end = prompt_width + kept_t
    return input_ids[:, first:end], attention_mask[:, first:end], kept_t


def map_micro_batches(
    fn: Callable[[Tensor, Tensor, int], Tensor | tuple[Tensor, ...]],
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    micro_batch_size: int | None,
    micro_batch_tokens: int | None = None,
) -> tuple[Tensor, ...]:
    """Run fn(input_ids, attention_mask, T') → [n, T'] outputs (one tensor or a tuple) on each trimmed
    micro-batch and assemble each output as [N, T] (0 on trimmed completion columns)."""
    n = input_ids.shape[0]
    plan = plan_micro_batches(attention_mask.sum(-1), micro_batch_size, micro_batch_tokens)
    outs: list[Tensor] | None = None
    for rows in plan:
        ids, mask, kept = trim_padding(input_ids[rows], attention_mask[rows], response_width)
        result = fn(ids, mask, kept)
        result = result if isinstance(result, tuple) else (result,)
        if outs is None:
            outs = [torch.zeros(n, response_width, dtype=r.dtype, device=r.device) for r in result]
        for out, r in zip(outs, result, strict=True):
            out[rows, :kept] = r  # [n, T']
    return tuple(outs or ())


def selective_log_softmax(
    logits: Tensor,
    targets: Tensor,
    temperature: float,
    chunk_rows: int = 8,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """log softmax(z / τ)[target] for logits [n, T, V] (any dtype), targets [n, T], a few rows at a time: each
    chunk is upcast to float32 on its own, so no full float32 [n, T, V] tensor exists next to the logits.

    With `with_entropy`, also the entropy of each position's distribution, H = logsumexp(z) − Σ_v p_v z_v
    (z = logits / τ), computed without gradient (a metric), or with it when `entropy_grad` (an entropy bonus).

    Returns: log-probs [n, T] (float32, or float64 for float64 logits), entropy [n, T] or None.
    """
    logps, entropies = [], []
    with_entropy = with_entropy or entropy_grad
    dtype = torch.promote_types(logits.dtype, torch.float32)  # bf16/fp16 logits are upcast, float64 kept
    for start in range(0, logits.shape[0], chunk_rows):
        block = logits[start : start + chunk_rows].to(dtype) / temperature  # [c, T, V]
        normaliser = torch.logsumexp(block, dim=-1)  # [c, T]
        picked = block.gather(-1, targets[start : start + chunk_rows, :, None]).squeeze(-1)  # [c, T]
        logps.append(picked - normaliser)  # [c, T]
        if with_entropy:
            with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
                probs = torch.softmax(block, dim=-1)  # [c, T, V]
                entropies.append(normaliser - (probs * block).sum(-1))  # [c, T]
    return torch.cat(logps), (torch.cat(entropies) if with_entropy else None)


def forward_logprobs(
    model,
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    temperature: float,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    pack: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """log π(y_t | x, y<t) [n, T] of one (already trimmed) micro-batch, one forward pass with logits only for
    the completion positions; gradients flow unless the caller disables them. The entropy (`with_entropy`) is a
    metric without gradient unless `entropy_grad` (rlx.algos.entropy's bonus).

    With `pack` (algo.pack_sequences) the real tokens run packed, without padding (rlx.forward.packing), wherever
    that is exact for the model; the output is then 0 where no real completion token is predicted. Otherwise
    (and where packing does not apply) the padded rectangle runs."""
    targets = input_ids[:, -response_width:]  # [n, T]
    head = split_head(model)
    picked = None
    if pack and packs(model, attention_mask):
        net, field = (model, "logits") if head is None else (head.decoder, "last_hidden_state")
        picked = packed_outputs(model, net, field, input_ids, attention_mask, response_width)  # [M, V | H]
    if picked is not None:
        chosen = targets[picked.rows, picked.cols]  # [M]
        if head is None:
            logp, entropy = selective_log_softmax(
                picked.out[None], chosen[None], temperature, 1, with_entropy, entropy_grad
            )
        else:
            logp, entropy = head_logprobs(picked.out, head.weight, chosen, temperature, with_entropy, entropy_grad)
        return picked.scatter(logp.flatten()), (picked.scatter(entropy.flatten()) if entropy is not None else None)
    # (perf) rows that share a prompt (a group) run it once: the same logits and gradient as one forward over
    # the full rows (rlx.forward.prefix, tests/rollout/test_prefix.py); positions are cumsum(mask) − 1 there too.
    if head is None:
        logits = shared_prefix_logits(model, input_ids, attention_mask, response_width)  # [n, T, V]
        return selective_log_softmax(logits, targets, temperature, with_entropy=with_entropy, entropy_grad=entropy_grad)
    # (perf) the LM head fused with the log-softmax, a chunk of positions at a time (rlx.forward.head)
    states = shared_prefix_states(model, head.decoder, input_ids, attention_mask, response_width)  # [n, T, H]
    flat = (states.flatten(0, 1), head.weight, targets.flatten())  # [n·T, H], [V, H], [n·T]
    logp, entropy = head_logprobs(*flat, temperature, with_entropy, entropy_grad)
    shape = targets.shape
    return logp.view(shape), (entropy.view(shape) if entropy is not None else None)


@overload
def sequence_logprobs(
    model,
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    temperature: float,
    micro_batch_size: int | None,
    *,
    micro_batch_tokens: int | None = None,
    with_entropy: Literal[False] = False,
    pack: bool = True,
) -> Tensor: ...


@overload
def sequence_logprobs(
    model,
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    temperature: float,
    micro_batch_size: int | None,
    *,
    micro_batch_tokens: int | None = None,
    with_entropy: Literal[True],
    pack: bool = True,
) -> tuple[Tensor, Tensor]: ...


def sequence_logprobs(
    model,
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    temperature: float,
    micro_batch_size: int | None,
    *,
    micro_batch_tokens: int | None = None,
    with_entropy: bool = False,
    pack: bool = True,
) -> Tensor | tuple[Tensor, Tensor]:
    """log π(y_t | x, y<t) of each completion token [N, T], micro-batch by micro-batch (`micro_batch_size`
    sequences, or a `micro_batch_tokens` budget; None = all at once); 0 on positions past each micro-batch's
    longest completion (everywhere no real completion token is predicted, with `pack`). With `with_entropy`,
    returns (log-probs, entropy) [N, T] each."""

    def run(ids: Tensor, mask: Tensor, width: int):
        logp, entropy = forward_logprobs(model, ids, mask, width, temperature, with_entropy, pack=pack)
        return (logp, entropy) if with_entropy else logp

    out = map_micro_batches(run, input_ids, attention_mask, response_width, micro_batch_size, micro_batch_tokens)
    return (out[0], out[1]) if with_entropy else out[0]
