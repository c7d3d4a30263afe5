"""`train(cfg)`: seed → build every component from its config group → check → evaluate → fit → evaluate →
export. Returns the summary it writes to `<run_dir>/summary.json`."""

from __future__ import annotations

import copy
import json
import logging
import time
from pathlib import Path

import lightning.pytorch as pl
import torch
from omegaconf import DictConfig, OmegaConf

from rlx.checks import build_node, check_algorithm, check_task
from rlx.errors import ConfigError
from rlx.models.reference import FrozenReference
from rlx.module import RLModule

log = logging.getLogger(__name__)


def build(cfg: DictConfig) -> tuple[RLModule, pl.Trainer]:
    """Everything a run needs, checked before the (possibly slow) model load."""
    pl.seed_everything(cfg.seed, workers=True)
    algo = build_node(cfg, "algo")
    advantage = build_node(cfg, "advantage")
    check_algorithm(algo, advantage, has_critic=algo.critic is not None)
    task = build_node(cfg, "data")
    reward = build_node(cfg, "reward")
    check_task(task, reward)
    sampler = build_node(cfg, "curriculum")
    sampler.bind(task.train)  # a curriculum the data cannot serve (sorted without its key) fails before the model loads
    loaded = build_node(cfg, "model")(task)
    reference = FrozenReference(copy.deepcopy(loaded.policy)) if algo.uses_reference else None  # the SFT policy
    critic = algo.critic.build(loaded.policy) if algo.critic is not None else None  # PPO's value network
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    module = RLModule(
        loaded.policy, loaded.tokenizer, task, reward, advantage, algo, sampler, reference=reference, critic=critic,
        val_batch_size=cfg.val_batch_size, samples_path=str(run_dir / "samples.jsonl"),
        samples_every=cfg.samples_every, samples_per_step=cfg.samples_per_step,
    )
    trainer = build_node(cfg, "trainer", logger=build_node(cfg, "logger"))
    return module, trainer


def validate(trainer: pl.Trainer, module: RLModule) -> dict:
    metrics = trainer.validate(module, verbose=False)[0]
    return {k: round(float(v), 4) for k, v in metrics.items()}


def train(cfg: DictConfig) -> dict:
    start = time.perf_counter()
    reset_peak_memory()  # a multirun runs its jobs in one process: each summary reports its own peak
    run_dir = Path(cfg.run_dir)
    module, trainer = build(cfg)
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    if cfg.ckpt_path is None:
        module.before_metrics = validate(trainer, module)
        log.info("before RL: %s", module.before_metrics)
    trainer.fit(module, ckpt_path=cfg.ckpt_path)
    # the last step's training metrics, read before validation replaces what the trainer holds
    train_metrics = {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()
                     if k.split("/")[0] in ("reward", "loss", "rollout", "adv", "curriculum")}
    after = validate(trainer, module)
    policy_dir = run_dir / "policy"
    module.policy.save_pretrained(policy_dir)
    module.tokenizer.save_pretrained(policy_dir)
    close = getattr(module.reward, "close", None)
    if close is not None:
        close()
    summary = {
        "before": module.before_metrics,
        "after": after,
        "train": train_metrics,
        "wall_s": round(time.perf_counter() - start, 1),
        "steps": trainer.global_step,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "run_dir": str(run_dir),
        "policy_dir": str(policy_dir),
        "metrics_csv": str(Path(trainer.logger.log_dir) / "metrics.csv") if trainer.logger else None,
        "samples": str(run_dir / "samples.jsonl"),
        "checkpoint": str(run_dir / "checkpoints" / "last.ckpt"),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def reset_peak_memory() -> None:
    """Start this run's peak-memory count afresh (Linux: writing 5 to /proc/self/clear_refs resets the
    high-water RSS that getrusage reports; CUDA: the allocator's peak statistics)."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError as err:
        log.warning("could not reset the peak-RSS counter (%s): peak_rss_mb covers the whole process", err)


def peak_rss_mb() -> float:
    import resource

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


__all__ = ["ConfigError", "build", "train"]
