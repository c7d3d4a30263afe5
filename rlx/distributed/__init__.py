"""Data-parallel RL over several processes (trainer=ddp, trainer=fsdp): rank-aware rollouts, updates,
evaluation and outputs. Every function is the identity, at no cost, in a single-process run.

Names are imported on first use (PEP 562), so `rlx.distributed.env` stays free of torch for Hydra callbacks."""

from __future__ import annotations

import importlib

_WHERE = {
    "EvalTally": "evaluation", "eval_sampler": "evaluation",
    "average_gradients": "gradients", "global_weights": "gradients", "mean_over_ranks": "gradients",
    "replicas": "outputs", "save_policy": "outputs",
    "HeldWeights": "fsdp", "full_weights": "fsdp", "shard_modules": "fsdp", "sharded": "fsdp",
    "Shard": "rollout", "sharded_round": "rollout", "take": "rollout",
    "World": "world",
    "env_is_rank_zero": "env", "quiet_other_ranks": "env",
}
__all__ = list(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'rlx.distributed' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rlx.distributed.{_WHERE[name]}"), name)
