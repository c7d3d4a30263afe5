"""What a data-parallel run leaves behind: one run directory, written by rank 0 alone.

Every rank runs the same `train(cfg)` into the same `run_dir`; the other ranks compute what rank 0 writes
(summaries, evaluations) but write nothing themselves: summary.json, samples.jsonl, the exported policy and the
sweep report's status files are rank 0's. `replicas` proves the ranks ended with the same weights.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from rlx.distributed.world import World


def fingerprint(model: torch.nn.Module) -> str:
    """A digest of a model's weights: sha256 over each parameter's float64 sum and sum of squares. Replicas
    that received the same updates are bitwise equal, so their digests are; replicas that diverged anywhere
    differ in some parameter's sums (equal sums after different updates would take a coincidence in float64)."""
    # deferred: torch.distributed.tensor only when parameters are sharded (trainer=fsdp)
    from torch.distributed.tensor import DTensor

    sums = []
    with torch.no_grad():
        for _, p in sorted(model.named_parameters(), key=lambda item: item[0]):
            x = p.detach()
            x = (x.full_tensor() if isinstance(x, DTensor) else x).double()  # FSDP: gathered (every rank calls)
            sums += [x.sum(), (x * x).sum()]
    data = torch.stack(sums).cpu().numpy().tobytes() if sums else b""
    return hashlib.sha256(data).hexdigest()


def replicas(world: World, model: torch.nn.Module) -> dict:
    """{"world_size", "weights_in_sync", "weights_fingerprint": one digest per rank}, on every rank."""
    digests = world.gather(fingerprint(model))
    return {"world_size": world.size, "weights_in_sync": len(set(digests)) == 1, "weights_fingerprint": digests}


def save_policy(world: World, policy, tokenizer, directory: Path) -> None:
    """`save_pretrained` of the policy and tokenizer by rank 0; a sharded (trainer=fsdp) policy is gathered
    first, on every rank."""
    # deferred: rlx.distributed.fsdp imports Lightning; this module needs only torch otherwise
    from rlx.distributed.fsdp import full_state_dict, sharded

    state = full_state_dict(policy) if sharded(policy) else None
    if world.is_zero:
        policy.save_pretrained(directory, **({"state_dict": state} if state is not None else {}))
        tokenizer.save_pretrained(directory)
