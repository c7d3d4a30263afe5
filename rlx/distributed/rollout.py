"""Data-parallel rollouts: every rank generates and scores a disjoint share of each round's prompts, and every
rank sees the whole round.

One RL step with W ranks:
  1. every rank holds an identical curriculum sampler (same seed, same state) and draws the same round of
     prompt indices from it;
  2. `sharded_round`: rank r generates and scores the r-th contiguous share of those prompts (all G completions
     of a prompt on one rank: a group never spans ranks), with its own generation stream (`rank_generator`) and
     its own reward (its own sandbox workers); the scored round is all-gathered, so every rank holds the same
     round, in the sampler's order;
  3. the sampler's observe()/keep() then see the global round on every rank: learnable_band's pass rates,
     dynamic sampling's kept groups and rounds stay identical across ranks with no broadcast, and the step
     ends after the same number of rounds everywhere;
  4. `take`: rank r trains on the r-th contiguous share of the step's groups (dynamic sampling may keep more
     groups of one rank's prompts than another's; the shares are rebalanced, whole groups each).
`algo.prompts_per_step` is therefore the global batch, whatever W is. Only token ids, masks, rewards and
log-probs travel (all_gather_object), never weights.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from rlx.distributed.world import World

log = logging.getLogger(__name__)


class RanksOutOfStep(RuntimeError):
    """The ranks' curricula drew different prompts: their sampler states diverged (a bug, never a user error)."""


# ---------------------------------------------------------------- moving and joining batches
def batch_to(batch, device):
    """A copy of a RolloutBatch (or any dataclass of tensors, lists and dicts of tensors) on `device`."""
    out = {}
    for f in fields(batch):
        value = getattr(batch, f.name)
        if isinstance(value, Tensor):
            out[f.name] = value.to(device)
        elif isinstance(value, dict):
            out[f.name] = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in value.items()}
    return replace(batch, **out)


def join(parts: list, pad_id: int):
    """Batches (from several ranks) as one, in order: each [N, P + T] field re-padded to a common prompt width
    (left) and completion width (right), each [N, T] field to the common completion width, group indices
    offset so that part k's groups follow part k-1's. Every field of the dataclass is carried, whatever its
    name, so fields added to RolloutBatch later travel too; a field set on some parts and None on others is
    refused (the parts were not prepared alike)."""
    if len(parts) == 1:
        return parts[0]
    widths_t = [p.response_mask.shape[1] for p in parts]
    widths_p = [p.input_ids.shape[1] - t for p, t in zip(parts, widths_t, strict=True)]
    width_p, width_t = max(widths_p), max(widths_t)
    offsets, total = [], 0
    for p in parts:
        offsets.append(total)
        total += int(p.group_index.max()) + 1 if len(p.group_index) else 0
    out: dict[str, Any] = {}
    for f in fields(parts[0]):
        values = [getattr(p, f.name) for p in parts]
        if all(v is None for v in values):
            out[f.name] = None
        elif any(v is None for v in values):
            raise ValueError(f"cannot join batches: field {f.name!r} is set on some and None on others")
        elif f.name == "group_index":
            out[f.name] = torch.cat([v + offset for v, offset in zip(values, offsets, strict=True)])
        elif isinstance(values[0], Tensor):
            padded = []
            for v, p_width, t_width in zip(values, widths_p, widths_t, strict=True):
                if v.dim() >= 2 and v.shape[1] == p_width + t_width:  # [N, P + T]: prompt left, completion right
                    fill = pad_id if f.name == "input_ids" else 0
                    v = torch.nn.functional.pad(v, (width_p - p_width, width_t - t_width), value=fill)
                elif v.dim() >= 2 and v.shape[1] == t_width:  # [N, T]: completion positions
                    fill = -1 if f.name == "token_turn" else 0  # a multi-turn batch: -1 off the sampled ids
                    v = torch.nn.functional.pad(v, (0, width_t - t_width), value=fill)
                padded.append(v)
            out[f.name] = torch.cat(padded)
        elif isinstance(values[0], list):
            out[f.name] = [x for v in values for x in v]
        elif isinstance(values[0], dict):
            keys = set().union(*values)
            missing = [k for k in keys if not all(k in v for v in values)]
            if missing:
                raise ValueError(f"cannot join batches: {f.name} {sorted(missing)} missing from some parts")
            out[f.name] = {k: torch.cat([v[k] for v in values]) for k in sorted(keys)}
        else:
            out[f.name] = values[0]
    return type(parts[0])(**out)


def group_count(batch) -> int:
    return int(batch.group_index.max()) + 1 if len(batch.group_index) else 0


# ---------------------------------------------------------------- generation
@contextmanager
def rank_generator(world: World) -> Iterator[None]:
    """Inside the block torch's global generator (CPU and the current CUDA device) is rank-specific; on exit
    it is restored and advanced by exactly one shared draw. The rank's seed mixes that draw with the rank, so
    it is a function of the generator's state at entry: per-step seeding (seed, step) makes every rank's
    stream, and a resumed run's, reproducible. The ranks' generators stay in step outside the block.
    One process: a no-op (the stream is exactly the single-process run's)."""
    if not world.distributed:
        yield
        return
    shared = int(torch.randint(0, 2**62, ()).item())  # the same draw on every rank
    seed = int(np.random.SeedSequence([shared, world.rank]).generate_state(1, dtype=np.uint64)[0] >> 1)
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def sharded_round(world: World, generate_round: Callable[[list[int]], Any], indices: list[int], pad_id: int):
    """`generate_round(indices)` (generate G completions per prompt and score them) for the whole round, with
    each rank doing only its contiguous share of `indices`; returns the round on every rank, groups in the
    order of `indices`. One process: `generate_round(indices)` itself."""
    if not world.distributed:
        return generate_round(indices)
    mine = [indices[i] for i in world.share(len(indices))]
    local = None
    if mine:  # a round of fewer prompts than ranks leaves some ranks idle
        with rank_generator(world):
            local = generate_round(mine)
        device = local.input_ids.device
        local = batch_to(local, "cpu")
    else:
        device = None
    parts = world.gather((list(indices), local))
    for rank, (drawn, _) in enumerate(parts):
        if drawn != list(indices):
            raise RanksOutOfStep(
                f"rank {rank} drew prompts {drawn[:8]}... where rank {world.rank} drew "
                f"{list(indices)[:8]}...: the ranks' curriculum samplers are out of step"
            )
    batches = [b for _, b in parts if b is not None]
    joined = join(batches, pad_id)
    return batch_to(joined, device if device is not None else default_device())


def default_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


# ---------------------------------------------------------------- the rank's share of the step
@dataclass
class Shard:
    """This rank's share of the step's batch, and how to see the whole step again for logging."""

    batch: Any  # a RolloutBatch: the groups this rank trains on (group_index renumbered 0..k-1)
    world: World
    shared: bool  # fewer groups than ranks: every rank holds all of them
    pad_id: int

    def whole(self, batch=None):
        """`batch` (default: the shard; pass the prepared shard, with advantages) joined over ranks, as one
        process would hold it: metrics computed from it equal the single-process formulas exactly."""
        batch = self.batch if batch is None else batch
        if not self.world.distributed or self.shared:
            return batch
        device = batch.input_ids.device
        return batch_to(join(self.world.gather(batch_to(batch, "cpu")), self.pad_id), device)

    def ranks(self) -> list[int]:
        """The rank that trains each row of `whole()`, row for row."""
        if not self.world.distributed or self.shared:
            return [self.world.rank] * len(self.batch.group_index)
        sizes = self.world.gather(len(self.batch.group_index))
        return [rank for rank, n in enumerate(sizes) for _ in range(n)]


def take(world: World, batch, pad_id: int, min_rows: int = 1, equal: bool = False) -> Shard:
    """Rank r's contiguous share of the step's K groups (whole groups; shares differ by at most one group).
    Every rank must get at least `min_rows` completions (one per minibatch: every rank makes the same optimiser
    steps). A step too small for that (a dynamic-sampling step that kept fewer groups than the ranks need; the
    start-up checks make full steps always large enough) is trained whole on every rank: the gradient is then
    the mean of W identical ones, and `Shard.whole` does not count the rows W times.
    `equal` (trainer=fsdp, whose sharded backwards need the same micro-batches on every rank): a step of K groups
    that W does not divide trains on its first W·⌊K/W⌋ groups."""
    k = group_count(batch)
    if not world.distributed:
        return Shard(batch, world, shared=False, pad_id=pad_id)
    rows_per_group = len(batch.group_index) // max(k, 1)
    if (k // world.size) * rows_per_group < min_rows:
        log.warning(
            "the step kept %d groups, too few to give each of %d ranks %d completions: every rank trains "
            "on all of them",
            k,
            world.size,
            min_rows,
        )
        return Shard(batch, world, shared=True, pad_id=pad_id)
    if equal and k % world.size:
        log.info(
            "dropping the last %d of the step's %d groups so that each of %d ranks trains on as many",
            k % world.size,
            k,
            world.size,
        )
        k -= k % world.size
    groups = world.share(k)
    rows = torch.nonzero((batch.group_index >= groups.start) & (batch.group_index < groups.stop)).squeeze(-1)
    local = batch.select(rows)
    return Shard(replace(local, group_index=local.group_index - groups.start), world, shared=False, pad_id=pad_id)
