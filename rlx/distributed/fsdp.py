"""trainer=fsdp: fully sharded data parallel (PyTorch's FSDP2, `fully_shard`) on Lightning's ModelParallelStrategy.

Each rank keeps 1/W of the policy's (and critic's) parameters, gradients and optimiser state; a layer's full
weights exist only while it runs. Lightning's FSDPStrategy (FSDP1) refuses CPUs ("requires a GPU accelerator",
and torch's FSDP1 "needs a non-CPU accelerator device"); FSDP2 runs on CPUs with gloo as on GPUs with NCCL, so
trainer=fsdp is the same code on a laptop and on a cluster.

What an RL step does differently from DDP:
  - generation, the no-grad log-prob and value forwards of `prepare`, and held-out evaluation run with every
    layer unsharded for the whole phase (`full_weights`): a rank decodes as many tokens as its own prompts need,
    and a sharded forward would all-gather at every decode step, so ranks stopping at different lengths would
    wait for each other forever. This holds one full copy of the weights per rank during those phases, as DDP
    does throughout (and as verl and OpenRLHF do when they hand FSDP weights to their rollout engines);
  - the update's forwards and backwards run sharded: FSDP all-gathers each layer before its forward and
    reduce-scatters its gradient after its backward (averaged over ranks, the convention `global_weights`
    expects), so every rank must run the same number of micro-batches. `check_fsdp` makes that hold at start
    (equal shares: algo.prompts_per_step a multiple of W; no token-budget micro-batches) and `take(equal=True)`
    keeps shares equal in steps where dynamic sampling kept a number of groups W does not divide;
  - checkpoints gather the full state on rank 0 (one file, as with one process or DDP); the exported policy is
    gathered the same way.
The frozen reference (algo.beta > 0) stays a full, unsharded copy on every rank.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import torch
from lightning.pytorch.strategies import ModelParallelStrategy
from torch.distributed.fsdp import FSDPModule, fully_shard

from rlx.errors import ConfigError


class FullyShardedDataParallel(ModelParallelStrategy):
    strategy_name = "rlx_fsdp"

    def __init__(self, process_group_backend: str | None) -> None:
        # one data-parallel dimension over every process, no tensor parallelism; checkpoints as one full file
        super().__init__(
            data_parallel_size="auto",
            tensor_parallel_size=1,
            save_distributed_checkpoint=False,
            process_group_backend=process_group_backend,
        )

    def setup_environment(self) -> None:
        self._data_parallel_size = self.num_nodes * self.num_processes  # FSDP over every rank
        super().setup_environment()


def sharded(module: torch.nn.Module | None) -> bool:
    return module is not None and any(isinstance(m, FSDPModule) for m in module.modules())


def shard_modules(lightning_module) -> None:
    """LightningModule.configure_model under trainer=fsdp: fully_shard each transformer block of the policy and
    the critic (the classes the model names in `_no_split_modules`), then each model as a whole (embeddings,
    final norm, head). Idempotent (Lightning calls configure_model before every fit and validate); a no-op under
    any other strategy."""
    try:
        trainer = lightning_module.trainer
    except RuntimeError:  # not attached to a Trainer (Lightning's public property raises)
        return
    if not isinstance(trainer.strategy, FullyShardedDataParallel):
        return

    mesh = lightning_module.device_mesh["data_parallel"]
    blocks = set(getattr(lightning_module.policy, "_no_split_modules", None) or [])
    if not blocks:
        raise ConfigError(
            f"trainer=fsdp shards a model by its transformer blocks, but {type(lightning_module.policy).__name__} "
            "names none (transformers' _no_split_modules): use trainer=ddp for this model"
        )
    for model in (lightning_module.policy, lightning_module.critic):
        if model is None or sharded(model):
            continue
        for module in model.modules():
            if type(module).__name__ in blocks:
                fully_shard(module, mesh=mesh)
        fully_shard(model, mesh=mesh)


@contextmanager
def full_weights(*models: torch.nn.Module | None) -> Iterator[None]:
    """Inside the block every FSDP module of `models` holds its full weights (one all-gather per module on
    entry) and forwards communicate nothing, so ranks may run different numbers of them; on exit the weights are
    resharded. A no-op for models that are not sharded (one process, DDP)."""
    modules = [m for model in models if model is not None for m in model.modules() if isinstance(m, FSDPModule)]
    if not modules:
        yield
        return
    for m in modules:
        m.set_reshard_after_forward(False)
        m.unshard()
    try:
        yield
    finally:
        for m in modules:
            m.reshard()
            m.set_reshard_after_forward(True)


class HeldWeights:
    """`full_weights` held from one hook to another (LightningModule.on_validation_epoch_start → _end)."""

    def __init__(self) -> None:
        self.stack = ExitStack()

    def hold(self, *models) -> None:
        self.stack.close()
        self.stack.enter_context(full_weights(*models))

    def release(self) -> None:
        self.stack.close()


def full_state_dict(model: torch.nn.Module) -> dict | None:
    """The model's full state dict on rank 0 (None elsewhere) when it is sharded: every rank must call it."""
    # deferred: torch.distributed.checkpoint loads only to gather a sharded model's weights
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return state or None


def check_fsdp(world_size: int, algo) -> None:
    if algo.prompts_per_step % world_size:
        raise ConfigError(
            f"trainer=fsdp: algo.prompts_per_step={algo.prompts_per_step} must be a multiple of the {world_size} "
            "ranks. Sharded forwards and backwards need every rank to train on as many completions as the others "
            "(each runs the same micro-batches); set "
            f"algo.prompts_per_step={world_size * -(-algo.prompts_per_step // world_size)}"
        )
    if algo.micro_batch_tokens is not None:
        raise ConfigError(
            f"trainer=fsdp: algo.micro_batch_tokens={algo.micro_batch_tokens} packs each rank's completions into a "
            "number of micro-batches that depends on their lengths, but sharded backwards need every rank to run "
            "the same number. Use algo.micro_batch_size (sequences per micro-batch) instead, or trainer=ddp"
        )
