"""The trainer's forward without padding: the real tokens of a micro-batch's rows packed end to end into a few
rows of the longest one's width, each sequence keeping its own position ids and seeing only its own tokens (a
block-diagonal causal attention mask), as TRL's `padding_free`, verl's `use_remove_padding` and OpenRLHF's
`packing_samples` do with flash-attention's varlen kernels on GPUs. Here the mask is an explicit 4D one, which
transformers' `sdpa` and `eager` attention take as given (CPU and GPU alike).

Only the tokens a completion log-prob needs run through the model: a row's real tokens (attention_mask 1) up to
the one before its last real token, and the hidden states are read only where a real completion token is
predicted. Padding inside the [N, P + T] rectangle (left-padded prompts, completions ending early, turns of
uneven length) costs nothing, while every real token stays context: a multi-turn episode's observation tokens
(response_mask 0, attention_mask 1) are packed and attended to like the model's own.

With rows sharing a prompt (a group of G completions) the prompts run once, as in rlx.forward.prefix: each
packed row's keys then start with the keys and values of the prompts its sequences continue, gathered from that
one prompt pass (whose backward sums the copies' gradients into the prompt), and a sequence's tokens see their
own prompt's keys only.

Same values and gradients as the padded forward to float rounding (tests/forward/test_packing.py derives the
bound). Where it would not be exact it is not used (`packs`): attention implementations that ignore a 4D mask
(flash-attention's), sliding windows shorter than a sequence, sharded models, and any model that fails a
one-time check against unpadded forwards.

Shapes: N rows, P prompt columns, T completion columns, B packed rows of width W, Wp prompt keys per packed row,
M predicted completion tokens.
"""

from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers.cache_utils import DynamicCache

from rlx.forward.head import sharded, split_head
from rlx.forward.prefix import shares_prompts
from rlx.rollout.engine import cache_argument

MASKED_ATTENTION = ("sdpa", "eager")  # implementations that apply a given 4D mask as it is
_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Picked:
    """The model's output at the positions predicting real completion tokens: `out` [M, ·] for tokens
    (rows[m], cols[m]) of the [N, T] completion grid; `scatter` puts per-token values back on the grid."""

    out: Tensor  # [M, ·]
    rows: Tensor  # [M]
    cols: Tensor  # [M]
    shape: tuple[int, int]  # (N, T)

    def scatter(self, values: Tensor) -> Tensor:
        """[M] → [N, T], 0 where no real completion token is predicted (differentiable)."""
        grid = values.new_zeros(self.shape)  # [N, T]
        return grid.index_put((self.rows, self.cols), values)


def packs(model, attention_mask: Tensor) -> bool:
    """Whether the packed forward is exact for `model` on rows of this mask: its attention applies a 4D mask
    as given, no sliding window is shorter than a row (then the window changes nothing), it is not sharded
    (rlx.forward.head), and it passed the one-time check against unpadded forwards."""
    config = model.config
    if getattr(config, "_attn_implementation", None) not in MASKED_ATTENTION:  # (transformers keeps it private)
        return False
    types = set(getattr(config, "layer_types", None) or ["full_attention"])
    if not types <= {"full_attention", "sliding_attention"}:  # chunked, linear or recurrent layers
        return False
    window = getattr(config, "sliding_window", None)
    windowed = "sliding_attention" in types or (window is not None and getattr(config, "use_sliding_window", True))
    if windowed and window is not None and int(attention_mask.sum(-1).max()) > window:
        return False
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if sharded(base):
        return False
    if model not in _checked:
        _checked[model] = _same_as_unpadded(model)
    return _checked[model]


def packed_outputs(
    model,
    net,
    field: str,
    input_ids: Tensor,
    attention_mask: Tensor,
    response_width: int,
    share: bool | None = None,
) -> Picked | None:
    """`net`'s output `field` at the positions that predict the real completion tokens, from one packed
    forward (and one prompt pass when rows share prompts). `net` is the causal LM (field "logits") or a
    decoder (field "last_hidden_state": the LM's, rlx.forward.head.split_head, or a critic's body); `model`
    decides whether prompts are shared (`share` overrides it). None when no real completion token is predicted
    (the caller runs the padded forward, whose output then still carries a gradient) and when nothing would be
    saved (every completion as long as the longest: packing would run as many tokens, with more indexing).

    Args: input_ids, attention_mask [N, P + T] (left-padded prompts, then the completions), T = response_width.
    """
    n, width = input_ids.shape
    width_p = width - response_width
    assert width_p > 0, "a completion token is predicted from at least one prompt token"
    real = attention_mask.bool()  # [N, P + T]
    position = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # [N, P + T] as in the padded forward
    # completion token t is predicted (from column P + t − 1) where it and its predecessor are real tokens
    predicted = real[:, width_p:] & real[:, width_p - 1 : -1]  # [N, T]
    rows, cols = predicted.nonzero(as_tuple=True)  # [M] each, row-major
    if rows.numel() == 0:
        return None
    query = width_p + cols - 1  # [M] the column whose output predicts (rows, cols)
    prompts = torch.cat([input_ids[:, :width_p], attention_mask[:, :width_p].to(input_ids.dtype)], dim=1)  # [N, 2P]
    distinct, row_prompt = torch.unique(prompts, dim=0, return_inverse=True)  # [K, 2P], [N]
    shared = shares_prompts(model, width_p, distinct.shape[0], n) if share is None else share
    # the tokens to run: each row's real ones up to its last query (from the completion on when prompts are shared)
    last_query = torch.full((n,), -1, dtype=torch.long, device=input_ids.device).scatter_reduce(
        0, rows, query, "amax"
    )  # [N] (−1: nothing predicted)
    columns = torch.arange(width, device=input_ids.device)  # [P + T]
    needed = real & (columns <= last_query[:, None]) & (columns >= (width_p if shared else 0))  # [N, P + T]
    rank = needed.cumsum(-1) - 1  # [N, P + T] a needed token's offset within its row's segment
    lengths = needed.sum(-1)  # [N]
    layout = _pack(lengths.tolist())
    padded_tokens = n * (response_width - 1 if shared else width)  # what rlx.forward.prefix would run
    if layout.rows * layout.width >= padded_tokens and rows.numel() == n * response_width:
        return None  # rows of one length: packing would run the same tokens, with more indexing
    prefix = _prompt_pass(model, net, field, distinct[:, :width_p], distinct[:, width_p:]) if shared else None
    packed = None
    if layout.rows:
        seq_rows, seq_cols = needed.nonzero(as_tuple=True)  # [S] every needed token
        packed_row = layout.row.to(input_ids.device)  # [N] packed row of each row's segment
        start = layout.start.to(input_ids.device)  # [N] its first slot
        slot = (packed_row[seq_rows], start[seq_rows] + rank[seq_rows, seq_cols])  # [S] each
        ids = input_ids.new_zeros(layout.rows, layout.width).index_put(slot, input_ids[seq_rows, seq_cols])
        pos = position.new_zeros(layout.rows, layout.width).index_put(slot, position[seq_rows, seq_cols])
        owner = torch.full_like(ids, -1).index_put(slot, seq_rows)  # [B, W] the row each slot holds, −1 padding
        packed = _packed_pass(model, net, field, ids, pos, owner, row_prompt, prefix)  # [B, W, ·]
    picked = None
    if packed is not None:
        in_packed = query >= (width_p if shared else 0)  # [M] predicted from a packed token
        offset = (start[rows] + rank[rows, query]).clamp(min=0)  # [M]
        picked = packed[packed_row[rows], offset]  # [M, ·]
    if prefix is not None:
        from_prompt = prefix.last.index_select(0, row_prompt[rows])  # [M, ·] the prompt's last position
        picked = from_prompt if picked is None else torch.where(in_packed[:, None], picked, from_prompt)
    assert picked is not None, "a predicted token comes from a packed row or from its prompt's last position"
    return Picked(picked, rows, cols, (n, response_width))


@dataclass(frozen=True)
class Layout:
    rows: int  # B packed rows
    width: int  # W slots each: the longest segment
    row: Tensor  # [N] the packed row of each segment (0 for an empty one)
    start: Tensor  # [N] its first slot


def _pack(lengths: list[int]) -> Layout:
    """Best-fit decreasing: segments longest first, each into the packed row whose room fits it most tightly (a
    new row when none has room), rows as wide as the longest segment (so no packed row attends over more tokens
    than a padded one would). O(N log N): the rows with room are kept sorted by it."""
    width = max(lengths, default=0)
    rows = 0
    rooms: list[tuple[int, int]] = []  # (room left, packed row) of the rows with room, sorted
    row, start = [0] * len(lengths), [0] * len(lengths)
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if lengths[i] == 0:
            break
        at = bisect.bisect_left(rooms, (lengths[i], -1))
        if at < len(rooms):
            room, b = rooms.pop(at)
        else:
            room, b, rows = width, rows, rows + 1
        row[i], start[i] = b, width - room
        if room > lengths[i]:
            bisect.insort(rooms, (room - lengths[i], b))
    return Layout(rows, width, torch.tensor(row, dtype=torch.long), torch.tensor(start, dtype=torch.long))


@dataclass(frozen=True)
class Prefix:
    last: Tensor  # [K, ·] the output at each prompt's last position (it predicts completion token 0)
    keys_values: list[tuple[Tensor, Tensor]]  # per layer [K, heads, P, d] each
    mask: Tensor  # [K, P] the prompts' attention mask


def _prompt_pass(model, net, field: str, ids: Tensor, mask: Tensor) -> Prefix:
    """Each distinct prompt once, keeping its keys and values (as rlx.forward.prefix does)."""
    cache = DynamicCache(config=model.config)
    limit = {"logits_to_keep": 1} if field == "logits" else {}
    position = (mask.cumsum(-1) - 1).clamp(min=0)  # [K, P]
    out = net(
        input_ids=ids,
        attention_mask=mask,
        position_ids=position,
        use_cache=True,
        **limit,
        **{cache_argument(model): cache},
    )
    keys_values = [(entry[0], entry[1]) for entry in cache]  # (a layer may also yield its sliding window)
    return Prefix(getattr(out, field)[:, -1], keys_values, mask)


def _packed_pass(
    model, net, field: str, ids: Tensor, pos: Tensor, owner: Tensor, row_prompt: Tensor, prefix: Prefix | None
) -> Tensor:
    """One forward over the packed rows [B, W] with the block-diagonal causal mask, after the keys and values
    of each packed row's prompts when prompts are shared. Returns `field` at every slot [B, W, ·]."""
    rows, width = ids.shape
    slots = torch.arange(width, device=ids.device)
    same = owner[:, :, None] == owner[:, None, :]  # [B, W, W] (padding slots see padding: finite, unused)
    allowed = same & (slots[:, None] >= slots[None, :])  # [B, W, W] causal within a sequence
    cache: dict[str, object] = {"use_cache": False}
    if prefix is not None:
        flat, prompt_of_key = _prompt_keys(owner, row_prompt, prefix.mask)  # [B, Wp] each
        prompt_of_query = torch.where(owner >= 0, row_prompt[owner.clamp(min=0)], -2)  # [B, W] (padding: none)
        allowed = torch.cat([prompt_of_query[:, :, None] == prompt_of_key[:, None, :], allowed], dim=-1)
        gathered = [(_gather(k, flat), _gather(v, flat)) for k, v in prefix.keys_values]  # [B, h, Wp, d] each
        cache = {"use_cache": True, cache_argument(model): DynamicCache(gathered)}
    mask = allowed[:, None]  # [B, 1, W, Wp + W]
    if model.config._attn_implementation == "eager":  # additive: 0 where allowed, the dtype's minimum elsewhere
        dtype = next(net.parameters()).dtype
        blocked = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=ids.device)
        mask = torch.where(mask, torch.zeros((), dtype=dtype, device=ids.device), blocked)
    limit = {"logits_to_keep": 0} if field == "logits" else {}  # every position's logits (0: all)
    return getattr(net(input_ids=ids, attention_mask=mask, position_ids=pos, **limit, **cache), field)


def _prompt_keys(owner: Tensor, row_prompt: Tensor, prompt_mask: Tensor) -> tuple[Tensor, Tensor]:
    """For each packed row, the real tokens of the prompts its sequences continue, one prompt after another: their
    indices into the [K·P] flattened prompt tokens [B, Wp] (0 on padding) and which prompt each is (−1 padding)."""
    count, width_p = prompt_mask.shape
    rows = owner.shape[0]
    held = owner >= 0  # [B, W]
    uses = torch.zeros(rows, count, dtype=torch.bool, device=owner.device)  # [B, K] the prompts each row continues
    uses[torch.arange(rows, device=owner.device)[:, None].expand_as(owner)[held], row_prompt[owner[held]]] = True
    lengths = prompt_mask.sum(-1)  # [K] real tokens of each prompt
    block = uses * lengths  # [B, K]
    first = block.cumsum(-1) - block  # [B, K] where prompt k's tokens start in row b
    prompt, column = prompt_mask.nonzero(as_tuple=True)  # [R] every real prompt token
    rank = (prompt_mask.cumsum(-1) - 1)[prompt, column]  # [R] its offset within its prompt
    row, token = uses[:, prompt].nonzero(as_tuple=True)  # the (row, token) pairs to place
    slot = first[row, prompt[token]] + rank[token]
    width = int(block.sum(-1).max())
    flat = torch.zeros(rows, width, dtype=torch.long, device=owner.device)
    which = torch.full((rows, width), -1, dtype=torch.long, device=owner.device)
    flat[row, slot] = prompt[token] * width_p + column[token]
    which[row, slot] = prompt[token]
    return flat, which


def _gather(states: Tensor, flat: Tensor) -> Tensor:
    """Prompt keys or values [K, h, P, d] → each packed row's [B, h, Wp, d] (index_select: the backward sums
    the gradients of every copy into the one prompt)."""
    k, heads, width_p, dim = states.shape
    tokens = states.transpose(1, 2).reshape(k * width_p, heads, dim)  # [K·P, h, d]
    picked = tokens.index_select(0, flat.flatten()).view(*flat.shape, heads, dim)  # [B, Wp, h, d]
    return picked.transpose(1, 2)  # [B, h, Wp, d]


@torch.no_grad()
def _same_as_unpadded(model) -> bool:
    """The packed forward against each row run alone without padding, on three short rows (two sharing a
    prompt, of uneven lengths so that two land in one packed row): a model whose attention ignores the mask or
    whose positions come from elsewhere fails it by far more than rounding."""
    training = model.training
    model.eval()
    try:
        vocab = model.config.vocab_size
        ids = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 1, 2, 6, 7, 0], [0, 0, 8, 9, 10, 0]]) % vocab
        mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 0]])
        device = next(model.parameters()).device
        ids, mask = ids.to(device), mask.to(device)
        head = split_head(model)  # the decoder alone where it gives the logits (no LM head to run), else all of it
        net = model if head is None else head.decoder
        outs = [net(input_ids=ids[r, mask[r].bool()][None], use_cache=False) for r in range(3)]
        field = "logits" if getattr(outs[0], "logits", None) is not None else "last_hidden_state"
        alone = [getattr(out, field)[0] for out in outs]  # [L, ·] each row's real tokens alone
        for share in (True, False):  # with the prompt pass's keys gathered, and with the prompts packed too
            picked = packed_outputs(model, net, field, ids, mask, 3, share=share)
            assert picked is not None
            for m, (row, col) in enumerate(zip(picked.rows.tolist(), picked.cols.tolist(), strict=True)):
                expected = alone[row][int(mask[row, : 3 + col].sum()) - 1]  # [V] the position before token col
                scale = max(1.0, float(expected.abs().max()))
                tolerance = max(1e-3, 8 * torch.finfo(expected.dtype).eps) * scale  # bf16 rounds at ~4e-3
                if not torch.allclose(picked.out[m].float(), expected.float(), rtol=0, atol=tolerance):
                    return False
        return True
    except Exception:  # a model that refuses a 4D mask or a cache of gathered keys: the padded forward runs
        return False
    finally:
        model.train(training)
