"""Data-parallel updates: each rank's rows of a minibatch weighted as one process would weight the whole
minibatch, and one gradient all-reduce per optimiser step.

Why not DDP's own gradient hooks: an RL step makes several optimiser steps (epochs × minibatches), each over
micro-batches whose number differs between ranks (token budgets, uneven shares), and PPO steps the critic
separately from the policy. DDP all-reduces inside every backward, so every rank would have to run the same
number of backwards, skip the sync on all but the last micro-batch (`no_sync`), and mark the critic's
parameters unused in the policy's backward. rlx instead accumulates a step's micro-batches locally, with no
communication at all, and all-reduces the accumulated gradients once (`average_gradients`), right before the
clipping that must see the synchronised gradient. It is the `no_sync`-on-all-but-the-last pattern with the
last backward's sync moved after it, and it does not care how many backwards each rank ran. The strategy
(rlx.distributed.strategy.DataParallel) switches DDP's reducer off so nothing is reduced twice.

The weights: DDP's convention is gradient = mean over ranks. A loss aggregated over a rank's own rows (a token
mean over the rank's tokens) then weighs the ranks equally, not the tokens. `global_weights` computes the
aggregation's per-token weights over the union of every rank's rows and multiplies this rank's by W, so the
mean over ranks of Σ w·L is exactly the single-process loss of the whole minibatch, for every mode (token mean,
sequence mean, sum over a constant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.distributed as dist
from torch import Tensor

from rlx.distributed.world import World

BUCKET_BYTES = 2**26  # gradients are reduced in flat buckets of at most this size


def global_weights(world: World, weigh: Callable[[Tensor], Tensor], mask: Tensor) -> Tensor:
    """weigh(mask) [n, T] of this rank's rows, computed as if every rank's minibatch rows were one minibatch,
    times W (DDP averages over ranks). One process: weigh(mask).

    weigh: an aggregation mode, mask [n, T] -> weights [n, T] that depend on the mask only.
    mask: this rank's [n, T] loss mask of the minibatch (T may differ between ranks; the union is right-padded
    with zeros, which every mode gives weight 0)."""
    if not world.distributed:
        return weigh(mask)
    masks = world.gather(mask.detach().cpu())  # W × [n_r, T_r]
    width = max(m.shape[1] for m in masks)
    union = torch.cat([torch.nn.functional.pad(m, (0, width - m.shape[1])) for m in masks])  # [Σ n_r, T_max]
    start = sum(m.shape[0] for m in masks[: world.rank])
    weights = weigh(union.to(mask.device))  # [Σ n_r, T_max]
    return weights[start : start + mask.shape[0], : mask.shape[1]] * world.size  # [n, T]


def average_gradients(world: World, parameters: Iterable[torch.nn.Parameter]) -> None:
    """Replace each trainable parameter's gradient by its mean over ranks, in place (two collectives: which
    parameters have a gradient anywhere, then the flat gradient buckets). A parameter without a gradient on a
    rank (its rows reached no such path, or it had no rows at all) counts as zeros there; one that has no
    gradient on any rank keeps `grad = None`, so the optimiser skips it as it would in one process.
    One process, and parameters sharded by trainer=fsdp: nothing happens."""
    if not world.distributed:
        return
    # deferred: torch.distributed.tensor only when parameters are sharded (trainer=fsdp)
    from torch.distributed.tensor import DTensor

    # FSDP's sharded parameters (DTensors) had their gradients reduce-scattered in their backward already
    params = [p for p in parameters if p.requires_grad and not isinstance(p, DTensor)]
    if not params:
        return
    device = params[0].device
    present = torch.tensor([p.grad is not None for p in params], dtype=torch.float32, device=device)
    dist.all_reduce(present, op=dist.ReduceOp.SUM)
    used = [p for p, n in zip(params, present.tolist(), strict=True) if n > 0]
    grads: list[torch.Tensor] = []
    for p in used:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        grads.append(p.grad)
    for bucket in buckets(grads):
        flat = torch.cat([g.reshape(-1) for g in bucket])  # one dtype per bucket
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= world.size
        offset = 0
        for g in bucket:
            n = g.numel()
            g.copy_(flat[offset : offset + n].view_as(g))
            offset += n


def buckets(grads: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Consecutive gradients grouped by dtype and device, at most BUCKET_BYTES each (one gradient larger than
    that is a bucket of its own)."""
    out: list[list[torch.Tensor]] = []
    size = 0
    for g in grads:
        nbytes = g.numel() * g.element_size()
        last = out[-1] if out else None
        if last is None or size + nbytes > BUCKET_BYTES or (last[0].dtype, last[0].device) != (g.dtype, g.device):
            out.append([g])
            size = nbytes
        else:
            last.append(g)
            size += nbytes
    return out


def mean_over_ranks(world: World, metrics: dict[str, float]) -> dict[str, float]:
    """Each metric's mean over ranks (keys must be the same on every rank: they are sorted and checked).
    The update's loss metrics are Σ w·L with `global_weights`, so their mean over ranks is the single-process
    value of the whole minibatch; gradient norms are taken after `average_gradients`, equal on every rank."""
    if not world.distributed:
        return dict(metrics)
    keys = sorted(metrics)
    every = world.gather(keys)
    if any(k != keys for k in every):
        raise ValueError(f"the ranks logged different update metrics: {every}")
    sums = world.sum([float(metrics[k]) for k in keys])
    return {k: s / world.size for k, s in zip(keys, sums, strict=True)}
