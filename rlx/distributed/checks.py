"""Start-up checks for runs over several processes: each names the key, the bad value and the fix.

`check_config` reads only the config (before the model loads); `check_trainer` runs once the Trainer exists and
knows its real world size (trainer.devices=auto, a SLURM allocation) and how its processes start.
"""

from __future__ import annotations

import logging

from omegaconf import DictConfig, ListConfig, OmegaConf

from rlx.errors import ConfigError

log = logging.getLogger(__name__)

STRATEGIES = ("rlx.distributed.strategy.DataParallel", "rlx.distributed.fsdp.FullyShardedDataParallel")


def configured_world_size(trainer_cfg) -> int | None:
    """trainer.devices × trainer.num_nodes when the config states it (an int or a device list); None for
    'auto' / -1, which only the Trainer resolves."""
    devices = trainer_cfg["devices"]  # conf/trainer/default.yaml states devices, num_nodes and strategy
    if isinstance(devices, (list, ListConfig)):
        count = len(devices)
    elif isinstance(devices, int) and devices > 0:
        count = devices
    elif isinstance(devices, str) and devices.strip().isdigit() and int(devices) > 0:
        count = int(devices)
    elif isinstance(devices, str) and "," in devices:
        count = len([d for d in devices.split(",") if d.strip()])
    else:
        return None
    return count * int(trainer_cfg["num_nodes"])


def strategy_target(trainer_cfg) -> str:
    strategy = trainer_cfg["strategy"]
    if isinstance(strategy, (dict, DictConfig)):
        return str(strategy["_target_"])
    return str(strategy)


def check_world(world_size: int, strategy: str, algo, advantage, val_rows: int) -> None:
    """What a run over `world_size` processes needs from the rest of the config."""
    if world_size <= 1:
        return
    if strategy not in STRATEGIES:
        raise ConfigError(
            f"trainer.strategy={strategy} over {world_size} processes: rlx synchronises gradients, rollouts and "
            "evaluation only under its own strategies: use trainer=ddp or trainer=fsdp, e.g. "
            f"`python -m rlx trainer=ddp trainer.devices={world_size}`"
        )
    if algo.prompts_per_step < world_size:
        raise ConfigError(
            f"algo.prompts_per_step={algo.prompts_per_step} is the global batch, shared by {world_size} ranks, so "
            f"some rank would generate nothing: set algo.prompts_per_step >= {world_size} (a multiple of it keeps the "
            "ranks' shares equal)"
        )
    if val_rows < world_size:
        raise ConfigError(
            f"the held-out split has {val_rows} rows for {world_size} ranks: every rank needs at "
            f"least one; raise data.val_size to >= {world_size}"
        )
    if strategy == STRATEGIES[1]:
        # deferred: rlx.distributed.fsdp imports torch and Lightning; only trainer=fsdp needs it
        from rlx.distributed.fsdp import check_fsdp

        check_fsdp(world_size, algo)
    if advantage.state_dict():
        raise ConfigError(
            f"advantage={type(advantage).__name__} keeps state across steps ({sorted(advantage.state_dict())}), "
            f"which each of the {world_size} ranks would update from its own share of the batch, so the ranks "
            "would drift apart and a checkpoint (rank 0's) would resume the others wrongly. Use a group "
            "estimator (advantage=group_norm, group_mean or rloo) or run on one process"
        )


def check_launcher(launcher_cfg, trainer_cfg) -> None:
    """Hydra's submitit SLURM launcher starts one process per task; Lightning (its SLURM environment) makes each
    task a rank. Tasks and nodes must then match the trainer's devices and nodes."""
    # every Hydra launcher config names its _target_; the submitit SLURM one always has nodes and tasks_per_node
    if launcher_cfg is None or "Slurm" not in launcher_cfg["_target_"]:
        return
    world = configured_world_size(trainer_cfg)
    devices = world // int(trainer_cfg["num_nodes"]) if world else None
    tasks, nodes = launcher_cfg["tasks_per_node"], launcher_cfg["nodes"]
    if devices is not None and tasks != devices:
        raise ConfigError(
            f"hydra.launcher.tasks_per_node={tasks} but trainer.devices={trainer_cfg['devices']}: under SLURM "
            "each task is one rank, so set hydra.launcher.tasks_per_node (and gpus_per_node) to trainer.devices"
        )
    if nodes != int(trainer_cfg["num_nodes"]):
        raise ConfigError(
            f"hydra.launcher.nodes={nodes} but trainer.num_nodes={trainer_cfg['num_nodes']}: set "
            "both to the number of machines of the job"
        )
    if world and world > 1 and strategy_target(trainer_cfg) not in STRATEGIES:
        raise ConfigError(
            f"{world} SLURM tasks need trainer=ddp or trainer=fsdp (got trainer.strategy="
            f"{strategy_target(trainer_cfg)})"
        )


def check_config(cfg: DictConfig, algo, advantage, task) -> None:
    """The checks the config alone decides, before the model loads."""
    world = configured_world_size(cfg.trainer)
    if world is not None:
        check_world(world, strategy_target(cfg.trainer), algo, advantage, len(task.val))
        check_spawn(world, launched_externally())
    check_launcher(hydra_launcher(cfg), cfg.trainer)


def check_spawn(world_size: int, external: bool) -> None:
    """Lightning starts the other ranks of a one-machine run by re-running the command line (its subprocess
    launcher): in a multirun that would rerun the whole sweep in every rank."""
    if world_size > 1 and not external and multirun():
        raise ConfigError(
            f"a multirun (-m) with {world_size} processes per run on one machine: Lightning starts the other ranks by "
            "re-running the command line, which would rerun the whole sweep in every rank. Run each configuration "
            "as its own command, or launch the sweep with hydra/launcher=slurm (each SLURM task one rank: "
            "hydra.launcher.tasks_per_node=trainer.devices)"
        )


def launched_externally() -> bool:
    """Whether a launcher Lightning recognises (torchrun, SLURM's srun, LSF) started this process as one rank."""
    # deferred: Lightning stays out of the config checks; only launcher detection needs it
    from lightning.fabric.plugins.environments import (
        LSFEnvironment,
        SLURMEnvironment,
        TorchElasticEnvironment,
    )

    return any(env.detect() for env in (TorchElasticEnvironment, SLURMEnvironment, LSFEnvironment))


def hydra_launcher(cfg: DictConfig):
    """The launcher node: cfg.hydra.launcher in a composed config, HydraConfig's in a running job, else None."""
    node = OmegaConf.select(cfg, "hydra.launcher", default=None)
    if node is not None:
        return node
    # deferred: this module imports no hydra at top; only this query reads Hydra's state
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get().launcher if HydraConfig.initialized() else None


def check_trainer(trainer, algo, advantage, task) -> None:
    """The same checks once the Trainer has resolved its world size (trainer.devices=auto, a SLURM allocation)."""
    world = trainer.world_size
    if world <= 1:
        return
    check_world(
        world,
        f"{type(trainer.strategy).__module__}.{type(trainer.strategy).__qualname__}",
        algo,
        advantage,
        len(task.val),
    )
    check_spawn(world, trainer.strategy.cluster_environment.creates_processes_externally)
    rows = (algo.prompts_per_step // world) * algo.group_size
    if rows < algo.minibatches:
        log.warning(
            "with %d ranks a rank trains on %d of the algo.prompts_per_step=%d prompts × algo.group_size=%d = %d "
            "completions, fewer than algo.minibatches=%d (every rank makes each optimiser step): every rank will train "
            "on the whole batch, %d× the update's compute. Raise algo.prompts_per_step to >= %d or lower "
            "algo.minibatches",
            world,
            algo.prompts_per_step // world,
            algo.prompts_per_step,
            algo.group_size,
            rows,
            algo.minibatches,
            world,
            world * -(-algo.minibatches // algo.group_size),
        )


def multirun() -> bool:
    # deferred: this module imports no hydra at top; only this query reads Hydra's state
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
