"""The rollout engine's KV cache: preallocated per-layer buffers of fixed size, plugged into any transformers
causal LM through its `Cache` interface (the model's own attention code reads and writes it).

Layout per layer: keys and values [S, H_kv, L, D] for S decode slots and L = prompt width + max new tokens,
allocated once. Rows 0..n−1 are the live slots; a decode step writes column `length` of those rows and the
attention reads the views [:n, :, :length + 1], so nothing is concatenated and no step reads columns that
hold nothing yet. A finished sequence leaves by `drop`: the live slots past the new end move into the holes
(only the moved rows are copied), so the decode batch shrinks at a cost proportional to what leaves.

`static=True` is the layout for a compiled decode step (torch.compile, CUDA graphs): every step has the same
shapes, so one graph serves it. The attention reads all L columns (unwritten ones zero and masked out), the
column written is a tensor (`position`) rather than a Python int, and the buffers have fixed addresses.

`keep` (a forward over columns some of whose keys and values are already there: rlx.rollout.turn_cache puts an
earlier turn's into the cache, then prefills a window of columns that, for rows with a shorter new suffix, starts
inside them) leaves those columns as they are: the forward's own keys and values go only where `keep` is false.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from transformers.cache_utils import Cache, CacheLayerMixin


@dataclass
class SlotState:
    """What every layer of one cache shares. Held by the cache and its layers alike, so that no reference
    cycle (layer ↔ cache) keeps a finished cache's buffers alive until the garbage collector runs."""

    slots: int  # S
    max_length: int  # L
    static: bool
    rows: int  # slots in the next forward (a prefix 0..n−1)
    length: int  # columns written
    position: Tensor  # [1] `length` as a tensor, the column a static step writes
    keep: Tensor | None = None  # [n, q] bool: the next forward's columns to leave unwritten (None: write all)


class SlotLayer(CacheLayerMixin):
    """One attention layer's slots."""

    is_sliding = False
    keys: Tensor  # [S, H_kv, L, D], allocated by lazy_initialization before any read (the base allows None)
    values: Tensor  # [S, H_kv, L, D]

    def __init__(self, state: SlotState) -> None:
        super().__init__()
        self.cache = state
        self.is_compileable = state.static

    def lazy_initialization(self, key_states: Tensor, value_states: Tensor) -> None:
        slots, length = self.cache.slots, self.cache.max_length
        # Dynamic: read only where written, so never cleared. Static: all L columns are read (masked), so zeros.
        alloc = key_states.new_zeros if self.cache.static else key_states.new_empty
        self.keys = alloc(slots, key_states.shape[1], length, key_states.shape[3])  # [S, H_kv, L, D]
        self.values = alloc(slots, value_states.shape[1], length, value_states.shape[3])  # [S, H_kv, L, D]
        self.device = key_states.device
        if self.cache.static and not torch.compiler.is_compiling():  # fixed addresses for CUDA graphs
            torch._dynamo.mark_static_address(self.keys)
            torch._dynamo.mark_static_address(self.values)
        self.is_initialized = True

    def update(self, key_states: Tensor, value_states: Tensor, *args, **kwargs) -> tuple[Tensor, Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        rows = self.cache.rows
        if self.cache.static:  # one column per step, at a tensor index: the same graph every step
            self.keys[:rows].index_copy_(2, self.cache.position, key_states)  # [n, H_kv, 1, D]
            self.values[:rows].index_copy_(2, self.cache.position, value_states)
            return self.keys[:rows], self.values[:rows]  # [n, H_kv, L, D]
        start = self.cache.length
        end = start + key_states.shape[2]
        keep = self.cache.keep
        if keep is not None:  # the kept columns hold an earlier turn's keys and values: those stay
            key_states = torch.where(keep[:, None, :, None], self.keys[:rows, :, start:end], key_states)
            value_states = torch.where(keep[:, None, :, None], self.values[:rows, :, start:end], value_states)
        self.keys[:rows, :, start:end] = key_states  # [n, H_kv, q, D]
        self.values[:rows, :, start:end] = value_states
        return self.keys[:rows, :, :end], self.values[:rows, :, :end]  # [n, H_kv, start + q, D] views

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        if self.cache.static:
            return self.cache.max_length, 0
        return self.cache.length + query_length, 0

    def get_seq_length(self):
        return self.cache.position if self.cache.static else self.cache.length

    def get_max_length(self) -> int:
        return self.cache.max_length

    def move(self, dst: Tensor, src: Tensor) -> None:
        if self.is_initialized:
            self.keys[dst] = self.keys[src]
            self.values[dst] = self.values[src]


class SlotCache(Cache):
    """`slots` sequences of up to `max_length` tokens. The engine sets `rows` (live slots, a prefix 0..n−1)
    and advances `length` after each forward; every layer shares both."""

    def __init__(
        self, num_layers: int, slots: int, max_length: int, static: bool = False, device: torch.device | None = None
    ) -> None:
        self.state = SlotState(slots, max_length, static, slots, 0, torch.zeros(1, dtype=torch.long, device=device))
        # the same layers as `Cache.layers`, typed as ours (transformers declares a union of its layer kinds)
        self.slot_layers = [SlotLayer(self.state) for _ in range(num_layers)]
        super().__init__(layers=list(self.slot_layers))

    slots = property(lambda self: self.state.slots)
    max_length = property(lambda self: self.state.max_length)
    static = property(lambda self: self.state.static)
    position = property(lambda self: self.state.position)
    length = property(lambda self: self.state.length, lambda self, v: setattr(self.state, "length", v))
    rows = property(lambda self: self.state.rows, lambda self, v: setattr(self.state, "rows", v))
    keep = property(lambda self: self.state.keep, lambda self, v: setattr(self.state, "keep", v))

    def advance(self, tokens: int) -> None:
        self.length += tokens
        self.position.fill_(self.length)

    def fill_from(self, prefill: SlotCache, repeats: int) -> None:
        """Copy a prefill cache of K prompts into slots 0..K·repeats−1, prompt k's keys and values into
        slots k·repeats .. k·repeats + repeats − 1 (its G completions share one prefill)."""
        k, width = prefill.rows, prefill.length
        for mine, theirs in zip(self.slot_layers, prefill.slot_layers, strict=True):
            if not mine.is_initialized:
                mine.lazy_initialization(theirs.keys[:0], theirs.values[:0])
            for dst, src in ((mine.keys, theirs.keys), (mine.values, theirs.values)):
                grouped = dst[: k * repeats].view(k, repeats, *dst.shape[1:])  # [K, G, H_kv, L, D]
                grouped[:, :, :, :width] = src[:k, None, :, :width]  # broadcast over the group
        self.rows = k * repeats
        self.length = width
        self.position.fill_(width)

    def take(self, slot: int, start: int, end: int) -> Tensor:
        """A copy of slot `slot`'s keys and values in columns start..end−1, every layer's: [layers, 2, H_kv, n, D]."""
        return torch.stack(
            [
                torch.stack((layer.keys[slot, :, start:end], layer.values[slot, :, start:end]))
                for layer in self.slot_layers
            ]
        )

    def put(self, slot: int, start: int, kv: Tensor) -> None:
        """Write `take`'s [layers, 2, H_kv, n, D] into slot `slot` from column `start` on. The buffers are
        allocated (zeroed) here if no forward did yet: the columns nothing writes are then finite for the masked
        attention that reads them."""
        n = kv.shape[3]
        for layer, pair in zip(self.slot_layers, kv, strict=True):
            if not layer.is_initialized:
                layer.lazy_initialization(pair[0][None], pair[1][None])
                layer.keys.zero_()
                layer.values.zero_()
            layer.keys[slot, :, start : start + n] = pair[0]
            layer.values[slot, :, start : start + n] = pair[1]

    def drop(self, finished: list[int]) -> tuple[list[int], list[int]]:
        """Remove the live slots in `finished`: the live slots past the new end move into the holes.
        Returns (destinations, sources) of the moved slots so the caller can move its own per-slot state."""
        gone = set(finished)
        end = self.rows - len(gone)
        holes = [s for s in sorted(gone) if s < end]
        movers = [s for s in range(end, self.rows) if s not in gone]
        if holes:
            device = self.slot_layers[0].device
            dst, src = torch.tensor(holes, device=device), torch.tensor(movers, device=device)
            for layer in self.slot_layers:
                layer.move(dst, src)
        self.rows = end
        return holes, movers
