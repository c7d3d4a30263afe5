"""Multi-turn episodes without re-prefill (`rollout.keep_turn_cache`): the rollout engine keeps each episode's keys
and values from one turn to the next, so a later turn prefills only what was appended since the last decode.

Turn k of an episode decodes from its context c; when its slot finishes, the keys and values the decode computed
(c and every sampled token but the last, whose keys and values were never computed) are copied out of the slot
(`SlotCache.take`) as an entry keyed by those token ids. Turn k + 1's context is c, the sampled tokens and the
observation. Its prefill looks up the entry sharing its longest prefix (content-addressed, as vLLM's prefix
cache: a chain of hashes over blocks of `BLOCK` ids finds it, a comparison of the ids confirms it; an entry
shorter than a block is found by the hash of its ids), writes the
entry's keys and values for the shared prefix into the prefill cache and runs the forward over the rest only
(the sampled last token and the observation): one window of the S columns that the longest new suffix spans,
whose columns a row already holds are left as they are (`SlotCache.keep`). A turn cut at a stop string, or
one given an eos it never sampled (rlx.envs.episodes), shares a shorter prefix and reuses that much.

Exactness: a kept key or value was computed by the decode step that fed its token ([1, d] matmuls attending to
the cache), the re-prefilled one by a forward over the whole context ([T, d] matmuls): the same float64-exact
quantity summed in another order, each within float32 rounding of it. So are the logits that follow, and
tests/rollout/test_turn_cache.py bounds |kept − re-prefilled| of turn-2 log-probs by 4r, r the measured float32
rounding of the trainer's forward (as tests/rollout/test_engine.py bounds the decode against the trainer): far
below a real error (a wrong position or column, ≥ 1e-3). Sampled tokens under the same random state are equal
unless a uniform lands within that rounding of a boundary. The update recomputes every log-prob it trains on
(later turns' μ is only the sampler's, for the mismatch metrics), so the kept cache never enters the loss.

Policy version (MULTITURN.md trap 9): keys and values belong to the weights that computed them. Every optimiser
step (a post-step hook, as rollout=vllm's) clears the cache, and every call compares the model and its
parameters' in-place version counters (an optimiser step, or weights copied in without one: the async sampler's
`load_weights`) with the entries' and starts empty on any change: a weight update is a miss, never a stale hit.

Memory: entries are bounded by `max_mib`; over it the oldest go first (an episode that ended leaves its entry
behind until the round's `release`), and a context whose entry went is re-prefilled: `rollout/kv_evicted` counts
them, `rollout/kv_reused_tokens` and `rollout/kv_prefill_tokens` the context tokens taken from the cache and
computed by prefills, per step (summed over the engine's calls).

vLLM (`rollout=vllm`) runs with `enable_prefix_caching=True` in the trainer's process: a later turn's request is
the token ids of the earlier one's prompt, completion and observation, so its full blocks hit vLLM's prefix
cache the same way, and the cache is reset with every weight push.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.optim.optimizer import register_optimizer_step_post_hook

from rlx.errors import ConfigError
from rlx.rollout.cache import SlotCache

BLOCK = 8  # ids per hashed block: a context shares a prefix with an entry when its first block matches

METRICS = ("rollout/kv_reused_tokens", "rollout/kv_prefill_tokens", "rollout/kv_evicted")


@dataclass
class Entry:
    """One decode slot's keys and values, kept for the episode's next turn."""

    ids: list[int]  # the tokens whose keys and values `kv` holds, in order
    kv: Tensor  # [layers, 2, H_kv, n, D]
    hashes: list[int]  # its keys in the index (`keys_of`)


def block_hashes(ids: list[int], blocks: int) -> list[int]:
    """h_b = hash((h_{b−1}, ids of block b)), h_{−1} = 0: equal h_b means (up to a hash collision, which the
    caller rules out by comparing ids) equal ids in blocks 0..b."""
    out, h = [], 0
    for b in range(blocks):
        h = hash((h, *ids[b * BLOCK : (b + 1) * BLOCK]))
        out.append(h)
    return out


def keys_of(ids: list[int]) -> list[int]:
    """An entry's index keys: its full blocks' chain hashes, or for an entry shorter than a block, the hash of
    its ids (`head`)."""
    return block_hashes(ids, len(ids) // BLOCK) if len(ids) >= BLOCK else [head(ids)]


def head(ids: list[int]) -> int:
    return hash(("head", *ids))


def shared_prefix(entry: list[int], context: list[int], known: int) -> int:
    """How many leading ids `entry` and `context` share, at most len(context) − 1 (a prefill needs one new
    token for its logits); the first `known` are compared at once, then one at a time."""
    if entry[:known] != context[:known]:
        return 0
    n, h = min(len(entry), len(context) - 1), known
    while h < n and entry[h] == context[h]:
        h += 1
    return min(h, n)


class TurnCache:
    """The kept keys and values of episodes between turns. Args: max_mib: the entries' memory bound (MiB)."""

    def __init__(self, max_mib: float) -> None:
        if isinstance(max_mib, bool) or not isinstance(max_mib, int | float) or not max_mib > 0:
            raise ConfigError(
                f"rollout.turn_cache_mib bounds the kept keys and values in MiB, a number > 0 (got {max_mib}): "
                "set it > 0, or rollout.keep_turn_cache=false to re-prefill every turn"
            )
        self.max_mib, self.max_bytes = max_mib, int(max_mib * 2**20)
        self.entries: OrderedDict[int, Entry] = OrderedDict()  # oldest first
        self.index: dict[int, int] = {}  # block chain hash -> the latest entry holding that prefix
        self.bytes = self.added = self.steps = 0
        self.version: tuple[int, ...] | None = None
        self.counts = dict.fromkeys(METRICS, 0.0)
        ref = weakref.ref(self)

        def on_step(optimizer, args, kwargs) -> None:  # every optimiser step: the kept keys and values are stale
            cache = ref()
            if cache is not None:
                cache.steps += 1
                cache.release()

        self._hook = register_optimizer_step_post_hook(on_step)

    def __getstate__(self) -> dict:
        """An engine sent to the sampler process (rollout.max_staleness > 0) gets an empty cache of the same bound,
        with its own optimiser hook (a hook does not pickle)."""
        return {"max_mib": self.max_mib}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_mib"])  # type: ignore[misc]

    def __del__(self) -> None:
        hook = getattr(self, "_hook", None)
        if hook is not None:
            hook.remove()

    def release(self) -> None:
        """Drop every entry (the round's episodes have ended, or the weights changed)."""
        self.entries.clear()
        self.index.clear()
        self.bytes = 0

    def sync(self, model) -> None:
        """Start empty if the weights may have changed since the entries were computed."""
        # Tensor._version counts in-place writes; it catches weights copied in without an optimiser step
        version = (id(model), self.steps, sum(p._version for p in model.parameters()))
        if version != self.version:
            self.release()
            self.version = version

    def add(self, ids: list[int], kv: Tensor) -> None:
        """Keep `ids`' keys and values [layers, 2, H_kv, n, D], the oldest entries evicted to make room (one larger
        than the whole bound is not kept; each counts in rollout/kv_evicted). Ids already kept (a group's
        completions that sampled alike) share the entry there is."""
        keys = keys_of(ids)
        same = self.index.get(keys[-1])
        if same is not None and self.entries[same].ids == ids:
            return
        size = kv.numel() * kv.element_size()
        if size > self.max_bytes:
            self.counts["rollout/kv_evicted"] += 1
            return
        while self.bytes + size > self.max_bytes:
            self.remove(next(iter(self.entries)))
            self.counts["rollout/kv_evicted"] += 1
        key, self.added = self.added, self.added + 1
        entry = Entry(ids, kv, keys)
        self.entries[key] = entry
        self.index.update(dict.fromkeys(entry.hashes, key))
        self.bytes += size

    def remove(self, key: int) -> None:
        entry = self.entries.pop(key)
        for h in entry.hashes:
            if self.index.get(h) == key:
                del self.index[h]
        self.bytes -= entry.kv.numel() * entry.kv.element_size()

    def lookup(self, contexts: list[list[int]]) -> list[tuple[Entry | None, int]]:
        """For each context, the entry sharing its longest prefix and the length h of that prefix (None, 0: none).
        The entries found are removed (their episodes' next decode keeps a longer one)."""
        found: list[tuple[Entry | None, int]] = []
        used: set[int] = set()
        for context in contexts:
            deepest = None
            for b, h in enumerate(block_hashes(context, (len(context) - 1) // BLOCK)):
                if h in self.index:
                    deepest = (self.index[h], (b + 1) * BLOCK)
            for n in range(1, min(BLOCK, len(context))) if deepest is None else ():  # an entry under a block
                if head(context[:n]) in self.index:
                    deepest = (self.index[head(context[:n])], n)
            if deepest is None:
                found.append((None, 0))
                continue
            entry = self.entries[deepest[0]]
            length = shared_prefix(entry.ids, context, deepest[1])
            found.append((entry, length) if length else (None, 0))
            used.add(deepest[0])
        for key in used:
            self.remove(key)
        return found

    def begin(self, model, ids: Tensor, mask: Tensor, repeats: int, keep: bool) -> TurnCall | None:
        """One generation call over the left-padded contexts ids, mask [K, P]; None when it neither reads nor
        keeps anything (a one-turn episode's call: nothing changes)."""
        self.sync(model)
        if not keep and not self.entries:
            return None
        contexts = [row[m.bool()].tolist() for row, m in zip(ids, mask, strict=True)]
        return TurnCall(
            self, contexts, self.lookup(contexts) if self.entries else [(None, 0)] * len(contexts), repeats, keep
        )

    def take_metrics(self) -> dict[str, float]:
        out, self.counts = self.counts, dict.fromkeys(METRICS, 0.0)
        return out


@dataclass
class TurnCall:
    """A generation call's use of the cache: its contexts' hits, and the slots it keeps as they finish."""

    cache: TurnCache
    contexts: list[list[int]]  # [K] each context's ids, unpadded
    hits: list[tuple[Entry | None, int]]  # [K] (entry, h): the first h ids of the context are kept
    repeats: int  # output row r continues context r // repeats
    keep: bool  # keep this call's slots for a next turn

    def prefill(self, model, cache_key: str, ids: Tensor, mask: Tensor, prefill: SlotCache) -> Tensor | None:
        """Prefill the contexts ids, mask [K, P] into `prefill` from the kept keys and values: the entries'
        prefixes written in, the forward over the last S columns, S the longest new suffix. Returns the logits
        [K, V] at each context's last token, or None when no context has kept ids (the caller prefills all)."""
        k, width = ids.shape
        counts = self.cache.counts
        if not any(h for _, h in self.hits):
            counts["rollout/kv_prefill_tokens"] += k * width
            return None
        suffix = [len(c) - h for c, (_, h) in zip(self.contexts, self.hits, strict=True)]  # [K] ≥ 1 each
        start = width - max(suffix)
        for row, (context, (entry, h)) in enumerate(zip(self.contexts, self.hits, strict=True)):
            if entry is not None:
                prefill.put(row, width - len(context), entry.kv[:, :, :, :h])
        columns = torch.arange(start, width, device=ids.device)  # [S]
        first_new = width - torch.tensor(suffix, device=ids.device)  # [K] each row's first column to compute
        prefill.rows, prefill.length = k, start
        prefill.keep = columns[None, :] < first_new[:, None]  # [K, S] kept (or pad) columns: not overwritten
        try:
            out = model(
                input_ids=ids[:, start:],  # [K, S]
                attention_mask=mask,  # [K, P] the kept columns and the window
                position_ids=(mask.cumsum(-1) - 1).clamp(min=0)[:, start:],  # [K, S] as in the trainer's forward
                use_cache=True,
                logits_to_keep=1,
                **{cache_key: prefill},
            )
        finally:
            prefill.keep = None
        prefill.advance(width - start)
        counts["rollout/kv_reused_tokens"] += sum(h for _, h in self.hits)
        counts["rollout/kv_prefill_tokens"] += k * (width - start)
        return out.logits[:, -1]  # [K, V]

    def keep_slots(self, cache: SlotCache, slot_row: Tensor, tokens: Tensor, slots: list[int], t: int) -> None:
        """Keep the decode slots `slots` at step t (their step-t tokens drawn, not fed): each slot's context and
        first t sampled tokens, the columns its keys and values fill, P − len(context) .. P + t − 1. slot_row [S]:
        the output row each slot generates; tokens [N, T]: the rows' draws (rlx.rollout.engine.DecodeState)."""
        if not self.keep or not slots:
            return
        width = cache.length - t  # P
        rows = slot_row[slots]  # [f] their output rows
        for slot, row, sampled in zip(slots, rows.tolist(), tokens[rows, :t].tolist(), strict=True):
            context = self.contexts[row // self.repeats]
            self.cache.add(context + sampled, cache.take(slot, width - len(context), width + t))

    def metrics(self) -> dict[str, float]:
        return self.cache.take_metrics()
