"""`train(cfg)`: seed → build every component from its config group → check → evaluate → fit → evaluate →
export. Returns the summary it writes to `<run_dir>/summary.json`."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

from rlx.callbacks.checkpoint import Checkpointing
from rlx.callbacks.infra import InfraError, nothing_scored, unscored_rows
from rlx.callbacks.resume import LAST, Resume
from rlx.checks import build_node
from rlx.cli import status, stop
from rlx.cli.files import as_disk_full, cut_torn_tail, guarded, remove, write_atomic, write_json
from rlx.cli.preflight import Inputs, build_inputs
from rlx.data.task import context_window
from rlx.distributed import World, env_is_rank_zero, quiet_other_ranks, replicas
from rlx.distributed.checks import check_config, check_trainer
from rlx.envs.build import build_env
from rlx.errors import ConfigError, explain
from rlx.inert import warn_inert
from rlx.models.adapters import check_strategy
from rlx.models.parts import Models
from rlx.module import Experience, RLModule, RunKeys
from rlx.peak_memory import peak_rss_mb, reset_peak_memory
from rlx.report.run import finish_run
from rlx.report.runs import HELD_OUT_FILE

log = logging.getLogger(__name__)
EXPORT_STAGING = ".export.partial"  # policy/ (and adapter/) are written here, then moved into the run directory


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
    env, max_context = build_env(cfg, reward, rollout)  # conf/env: the episode (env=single: one turn of the reward)
    task.check_fields(env.required_fields)  # the fields the environment reads, in every row
    model = build_node(cfg, "model")
    warn_inert(cfg, algo=algo, advantage=advantage, task=task, reward=reward, sampler=sampler, model=model)
    loaded = model(task)
    task.render_prompts(loaded.tokenizer)  # conversational prompts become text with the chat template, once
    rows = len(task.train)
    task.check_prompt_lengths(loaded.tokenizer, context_window(loaded.policy.config))  # before any generation
    if len(task.train) != rows:
        sampler.bind(task.train)  # data.overlong_prompts=drop dropped rows (binding twice is harmless)
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
    max_context = max_context or context_window(loaded.policy.config)  # env.max_context_tokens: null
    experience = Experience(loaded.tokenizer, task, reward, sampler, rollout, env, max_context)
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
        write_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    try:
        return run_and_export(module, trainer, resume, run_dir, start)
    except BaseException as err:  # a failure or a stop: what happened goes into summary.json, nothing half-written
        ended = as_disk_full(err, run_dir)  # a full disk anywhere: one line naming the file
        if World.current().is_zero:
            write_outcome(run_dir, ended, module, trainer, resume, time.perf_counter() - start)
        if ended is not err:
            raise ended from err
        raise
    finally:
        if module.env is not None:  # conf/env's own resources (env=openenv's server); the reward is closed above
            module.env.close()


def run_and_export(module: RLModule, trainer: pl.Trainer, resume: Resume, run_dir: Path, start: float) -> dict:
    if resume.path is None:
        status.enter("evaluation before RL")
        module.before_metrics = validate(trainer, module)
        log.info("before RL: %s", module.before_metrics)
        check_held_out(run_dir, 0, module.reward, "before RL")  # a reward that scores nothing: stop before RL
    status.enter("RL")
    trainer.fit(module, ckpt_path=resume.path)
    resume.raise_if_stopped(trainer)
    train_metrics = last_train_metrics(trainer)  # read before validation replaces what the trainer holds
    status.enter("evaluation after RL")
    after = final_validation(trainer, module)
    check_held_out(run_dir, trainer.global_step, module.reward, "after RL")
    status.enter("export")
    world = World.current()  # every rank evaluated its share; rank 0 alone writes what follows
    distributed = replicas(world, module.policy)  # world_size, and whether every rank ended with the same weights
    exported = export(module, world, run_dir)  # policy/ (+ adapter/ with LoRA)
    if module.env is not None:
        module.env.close()  # the environment's own resources (env=single's reward is the run's: closed below)
    module.reward.close()
    summary = {
        "status": "completed",
        "before": module.before_metrics,
        "after": after,
        "train": train_metrics,
        **resume.totals(trainer, time.perf_counter() - start, peak_rss_mb()),  # wall_s, peak_rss_mb, segments
        "steps": trainer.global_step,
        **distributed,
        **run_files(run_dir, trainer),
        **exported,
    }
    stop.record_only()  # the run is complete: a signal from here on changes nothing
    if world.is_zero:
        write_json(run_dir / "summary.json", summary)
        finish_run(run_dir, module, trainer)  # footprint.json, reward/KL/length plots and report.md in the run dir
    return summary


def last_train_metrics(trainer: pl.Trainer) -> dict:
    """The last step's training metrics (reward/, loss/, rollout/, adv/, curriculum/; NaN: the step had none)."""
    return {
        k: round(float(v), 4)
        for k, v in trainer.callback_metrics.items()
        if k.split("/")[0] in ("reward", "loss", "rollout", "adv", "curriculum") and not v.isnan()
    }


def run_files(run_dir: Path, trainer: pl.Trainer) -> dict:
    return {
        "run_dir": str(run_dir),
        "metrics_csv": str(Path(log_dir) / "metrics.csv") if (log_dir := logger_dir(trainer)) else None,
        "samples": str(run_dir / "samples.jsonl"),
        "held_out": str(run_dir / "heldout.jsonl"),
        "checkpoint": str(last_checkpoint(trainer, run_dir)),
    }


def last_checkpoint(trainer, run_dir: Path) -> Path:
    """Where the run's last.ckpt is (checkpoint.dirpath)."""
    dirs = [callback.dirpath for callback in trainer.callbacks if isinstance(callback, Checkpointing)]
    return (dirs[0] if dirs else run_dir / "checkpoints") / LAST


def export(module: RLModule, world: World, run_dir: Path) -> dict[str, str]:
    """The peft's export (policy/, and adapter/ with LoRA) written into a staging directory and moved into the
    run directory once complete: a failure (a full disk) or a stop never leaves half a policy/ behind."""
    staging = run_dir / EXPORT_STAGING
    if world.is_zero:
        remove(staging)  # what an earlier, interrupted export left
    with guarded(run_dir / "policy", "the exported policy", partial=staging if world.is_zero else None):
        written = module.peft.export(world, module.policy, module.tokenizer, staging)
        if world.is_zero:
            for part in sorted(staging.iterdir()):
                replace_dir(part, run_dir / part.name)
            staging.rmdir()
    return {key: str(run_dir / Path(path).relative_to(staging)) for key, path in written.items()}


def replace_dir(new: Path, target: Path) -> None:
    """`target` becomes `new` (a renamed directory); an earlier segment's export there is removed after."""
    old = target.with_name(f".{target.name}.old")
    remove(old)
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    remove(old)


def check_held_out(run_dir: Path, step: int, reward, when: str) -> None:
    """Every rank stops if the held-out evaluation after `step` steps scored nothing (rank 0 reads the rows)."""
    world = World.current()
    rows = unscored_rows(run_dir / HELD_OUT_FILE, step) if world.is_zero else 0
    agreed = int(world.max([float(rows)])[0])
    if agreed:
        raise InfraError(nothing_scored(reward, f"any of the {agreed} held-out rows {when}"))


def write_outcome(run_dir: Path, err: BaseException, module: RLModule, trainer: pl.Trainer, resume, wall_s: float):
    """summary.json for a run that failed or was stopped: what happened, where, and what it leaves (the steps done,
    the last complete checkpoint, the metrics so far); appended files end at their last complete row."""
    stop.record_only()  # a second signal must not cut this write
    for name in ("metrics.csv", "samples.jsonl", HELD_OUT_FILE):
        cut_torn_tail(run_dir / name)
    signum = stop.pending()
    stopped = isinstance(err, SystemExit)
    checkpoint = last_checkpoint(trainer, run_dir)
    summary = {
        "status": "stopped" if stopped else "failed",
        "error": f"stopped by {stop.name(signum)}" if stopped and signum else message_of(err),
        "phase": status.phase(),
        "before": module.before_metrics,
        "after": None,
        "train": last_train_metrics(trainer),
        **resume.totals(trainer, wall_s, peak_rss_mb()),
        "steps": trainer.global_step,
        **run_files(run_dir, trainer),
        "checkpoint": str(checkpoint) if checkpoint.is_file() else None,
    }
    try:
        write_json(run_dir / "summary.json", summary)
    except Exception:  # noqa: BLE001 — the run's own error is the one to report
        log.warning("could not write %s", run_dir / "summary.json", exc_info=True)


def message_of(err: BaseException) -> str:
    """The user's one line for `err` (rlx.errors.explain), else its type and first line."""
    return explain(err) or f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"


def logger_dir(trainer: pl.Trainer) -> str | None:
    """The first logger's own directory (where CSVLogger writes metrics.csv), None without a logger or dir."""
    return trainer.logger.log_dir if trainer.logger else None


__all__ = ["ConfigError", "build", "peak_rss_mb", "reset_peak_memory", "train"]
