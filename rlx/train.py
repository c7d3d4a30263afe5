"""`train(cfg)`: seed → build every component from its config group → check → evaluate → fit → evaluate →
export. Returns the summary it writes to `<run_dir>/summary.json`."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

from rlx.callbacks.resume import Resume
from rlx.checks import build_node
from rlx.cli import status
from rlx.cli.preflight import Inputs, build_inputs
from rlx.distributed import World, env_is_rank_zero, quiet_other_ranks, replicas
from rlx.distributed.checks import check_config, check_trainer
from rlx.errors import ConfigError
from rlx.inert import warn_inert
from rlx.models.adapters import check_strategy
from rlx.models.parts import Models
from rlx.module import Experience, RLModule, RunKeys
from rlx.peak_memory import peak_rss_mb, reset_peak_memory
from rlx.report.run import finish_run

log = logging.getLogger(__name__)


def build(cfg: DictConfig, inputs: Inputs | None = None) -> tuple[RLModule, pl.Trainer]:
    """Everything a run needs, checked before the (possibly slow) model load. `inputs`: the data, reward and
    algorithm already built and checked (rlx.cli.preflight.build_inputs, before the heavy imports)."""
    pl.seed_everything(cfg.seed, workers=True)
    inputs = inputs or build_inputs(cfg)
    algo, advantage, task, reward = inputs.algo, inputs.advantage, inputs.task, inputs.reward
    check_config(cfg, algo, advantage, task)  # several processes: what they need from the config (rlx.distributed)
    sampler = build_node(cfg, "curriculum")
    sampler.bind(
        task.train
    )  # once: a curriculum the data cannot serve (sorted without its key) fails before the model loads
    peft = build_node(cfg, "peft")
    rollout = build_node(cfg, "rollout")  # before the model loads: rollout=vllm without vLLM stops here
    model = build_node(cfg, "model")
    warn_inert(cfg, algo=algo, advantage=advantage, task=task, reward=reward, sampler=sampler, model=model)
    loaded = model(task)
    task.render_prompts(loaded.tokenizer)  # conversational prompts become text with the chat template, once
    policy = peft.wrap(loaded.policy)  # peft=lora: adapters on the loaded weights
    reference = peft.reference(policy) if algo.uses_reference else None  # the starting (SFT) policy
    critic = algo.critic.build(policy) if algo.critic is not None else None  # PPO's value network
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    run = RunKeys(
        val_batch_size=cfg.val_batch_size,
        val_samples=cfg.val_samples,
        seed=cfg.seed,
        samples_every=cfg.samples_every,
        samples_per_step=cfg.samples_per_step,
        samples_path=str(run_dir / "samples.jsonl"),
        held_out_path=str(run_dir / "heldout.jsonl"),
    )
    experience = Experience(loaded.tokenizer, task, reward, sampler, rollout)
    module = RLModule(Models(policy, reference, critic), experience, algo, advantage, run, peft=peft)
    trainer = build_node(cfg, "trainer", logger=build_node(cfg, "logger"))
    check_trainer(trainer, algo, advantage, task)
    check_strategy(peft, trainer)
    return module, trainer


def validate(trainer: pl.Trainer, module: RLModule) -> dict:
    metrics = trainer.validate(module, verbose=False)[0]
    return {k: round(float(v), 4) for k, v in metrics.items()}


def final_validation(trainer: pl.Trainer, module: RLModule) -> dict:
    """The held-out metrics after RL: fit's own evaluation when it ran after the last step (the same weights and,
    for val_samples, the same seed: the same numbers), else a new one."""
    if module.fit_validation is not None and module.fit_validation[0] == trainer.global_step:
        return {k: round(float(v), 4) for k, v in module.fit_validation[1].items()}
    return validate(trainer, module)


def train(cfg: DictConfig, inputs: Inputs | None = None) -> dict:
    start = time.perf_counter()
    quiet_other_ranks()  # several processes: rank 0 alone prints (rlx.distributed)
    reset_peak_memory()  # a multirun runs its jobs in one process: each summary reports its own peak
    run_dir = Path(cfg.run_dir)
    resume = Resume.prepare(cfg)  # ckpt_path checked (exists, readable, same config) before anything loads
    status.enter("building")
    module, trainer = build(cfg, inputs)
    resume.attach(trainer, start)
    if env_is_rank_zero():  # the ranks Lightning starts run this too, before the process group exists
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    if resume.path is None:
        status.enter("evaluation before RL")
        module.before_metrics = validate(trainer, module)
        log.info("before RL: %s", module.before_metrics)
    status.enter("RL")
    trainer.fit(module, ckpt_path=resume.path)
    resume.raise_if_stopped(trainer)
    # the last step's training metrics, read before validation replaces what the trainer holds
    train_metrics = {
        k: round(float(v), 4)
        for k, v in trainer.callback_metrics.items()
        if k.split("/")[0] in ("reward", "loss", "rollout", "adv", "curriculum") and not v.isnan()  # NaN: no data
    }
    status.enter("evaluation after RL")
    after = final_validation(trainer, module)
    status.enter("export")
    world = World.current()  # every rank evaluated its share; rank 0 alone writes what follows
    distributed = replicas(world, module.policy)  # world_size, and whether every rank ended with the same weights
    exported = module.peft.export(world, module.policy, module.tokenizer, run_dir)  # policy/ (+ adapter/ with LoRA)
    close = getattr(module.reward, "close", None)
    if close is not None:
        close()
    summary = {
        "before": module.before_metrics,
        "after": after,
        "train": train_metrics,
        **resume.totals(trainer, time.perf_counter() - start, peak_rss_mb()),  # wall_s, peak_rss_mb, segments
        "steps": trainer.global_step,
        **distributed,
        "run_dir": str(run_dir),
        **exported,
        "metrics_csv": str(Path(log_dir) / "metrics.csv") if (log_dir := logger_dir(trainer)) else None,
        "samples": str(run_dir / "samples.jsonl"),
        "held_out": str(run_dir / "heldout.jsonl"),
        "checkpoint": str(run_dir / "checkpoints" / "last.ckpt"),
    }
    if world.is_zero:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        finish_run(run_dir, module, trainer)  # footprint.json, reward/KL/length plots and report.md in the run dir
    return summary


def logger_dir(trainer: pl.Trainer) -> str | None:
    """The first logger's own directory (where CSVLogger writes metrics.csv), None without a logger or dir."""
    return trainer.logger.log_dir if trainer.logger else None


__all__ = ["ConfigError", "build", "peak_rss_mb", "reset_peak_memory", "train"]
