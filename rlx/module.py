"""RLModule: the policy, an optional critic and a frozen reference, driven by Lightning (manual optimisation).

One training step reads top to bottom:
    collect  — sample prompts, generate a group per prompt with the KV cache, score (rlx.rollout.collect)
    prepare  — reward shaping, reference / sampling-policy log-probs, per-token rewards, critic values,
               advantages (rlx.update.prepare)
    update   — μ epochs × minibatches of the objective (rlx.algos.objective), one optimiser step per minibatch
               over its micro-batches; with a critic (PPO) also the value loss, stepped by its own optimiser
               (rlx.update.update)
`trainer.global_step` counts RL steps (not optimiser steps), so `trainer.max_steps` is the number of RL steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule
from lightning.pytorch.plugins.precision import MixedPrecision
from torch.optim.lr_scheduler import LRScheduler
from torch.utils.data import DataLoader, IterableDataset

from rlx.algos.correction import NoCorrection
from rlx.algos.spec import Algorithm
from rlx.callbacks.step_metrics import publish_step_metrics
from rlx.curriculum.base import PromptSampler
from rlx.data.task import Task
from rlx.distributed import (
    EvalTally,
    HeldWeights,
    World,
    eval_sampler,
    full_weights,
    mean_over_ranks,
    shard_modules,
    sharded,
    take,
)
from rlx.envs.protocol import Environment, EpisodeDriver, runs_episodes
from rlx.errors import ConfigError
from rlx.models.parts import Models
from rlx.models.reference import FrozenReference
from rlx.module_state import Stateful, load_state, save_state
from rlx.rewards.base import Reward
from rlx.rollout.async_collect import AsyncCollect, throughput
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import Rollout, RolloutConfig, RolloutStats, collect
from rlx.rollout.generation import Generator
from rlx.rollout.held_out import append_records, held_out_episodes, held_out_records, held_out_verdicts, passed
from rlx.rollout.staleness import staleness
from rlx.samples import append_samples, reference_fields
from rlx.step_log import step_metrics
from rlx.update import NonFiniteGuard, Optimisation, prepare, update


class StepTicker(IterableDataset):
    """The trainer's 'data': one tick per RL step, whose value nothing reads (`trainer.global_step` is the step).

    Why not a dataset of the step's prompts drawn from the curriculum sampler: Lightning fetches the training
    iterable one batch ahead. Its `_PrefetchDataFetcher` (lightning/pytorch/loops/fetchers.py, "Pre-fetching at
    least 1 batch is necessary to properly track whether a batch is the last one ... when the length is not
    available") draws batch s+1 before `training_step` runs batch s, and the form that turns this off,
    `training_step(self, dataloader_iter)`, is marked experimental in Lightning's docs (LightningModule
    .training_step; the trainer warns so). A prompt batch drawn a step early would be drawn before step s's
    rewards reach `sampler.observe` (learnable-band and other scored curricula), before `begin_step(s + 1)`
    (paced curricula), and a checkpoint after step s would hold a sampler already one draw ahead (exact resume,
    tests/resume). Besides, one step may sample several rounds, each sized by the rewards of the one before
    (dynamic sampling: rlx.rollout.collect), which no batch fetched ahead can know. So the module owns the
    sampler (checkpointed in on_save_checkpoint) and draws inside the step; the DataLoader runs in this
    process (num_workers=0), and prefetching a tick costs nothing and changes no state."""

    def __iter__(self):
        tick = 0
        while True:
            yield tick
            tick += 1


@dataclass(frozen=True)
class Experience:
    """Where a step's experience comes from: the task's rows (conf/data), the curriculum sampler that picks the
    prompts (conf/curriculum; bound to `task.train`: rlx.train.build binds it before the model loads, so a
    curriculum the data cannot serve fails early), the engine that continues them (conf/rollout), the reward
    that scores them (conf/reward), and the tokenizer."""

    tokenizer: Any
    task: Task
    reward: Reward
    sampler: PromptSampler
    rollout: Generator
    env: Environment | EpisodeDriver | None = (
        None  # conf/env: the episode a prompt starts (None: the one-turn episode of `reward`)
    )
    max_context_tokens: int | None = None  # an episode whose next turn would not fit ends (env.max_context_tokens)


@dataclass(frozen=True)
class RunKeys:
    """conf/config.yaml's run keys the module reads, and where it writes."""

    val_batch_size: int  # held-out prompts decoded per batch
    val_samples: int  # sampled held-out completions per prompt (0: greedy only; rlx.rollout.held_out)
    seed: int
    samples_every: int  # write samples.jsonl every this many steps
    samples_per_step: int
    samples_path: str | None = None  # None: no samples.jsonl
    held_out_path: str | None = None  # None: no heldout.jsonl (each held-out row's completion and verdict)


class RLModule(LightningModule):
    def __init__(
        self, models: Models, experience: Experience, algo: Algorithm, advantage, run: RunKeys, *, peft
    ) -> None:
        """`models`: the policy and the optional reference (when the algorithm uses one) and critic (PPO);
        `peft`: the adapter strategy that wrapped the policy (conf/peft: train exports the trained weights
        through it)."""
        super().__init__()
        self.automatic_optimization = False
        self.policy = models.policy
        self.critic = models.critic
        # the reference: a plain holder, not a submodule: in no state dict, moved in on_fit_start
        self.reference = reference = models.reference
        if algo.ref_sync_steps is not None and reference is not None and not reference.refreshable:
            raise ConfigError(
                f"algo.ref_sync_steps={algo.ref_sync_steps}: this reference (peft=lora: the base model with its "
                "adapters off) has no copy of its own to refresh. Set algo.ref_sync_steps=null, or peft=none"
            )
        tokenizer, task, sampler = experience.tokenizer, experience.task, experience.sampler
        self.tokenizer, self.task, self.reward = tokenizer, task, experience.reward
        self.env, self.max_context_tokens = experience.env, experience.max_context_tokens
        self.advantage, self.algo, self.sampler = advantage, algo, sampler
        self.advantage.bind(tokenizer)
        if sampler.size != len(task.train):
            raise ValueError(
                f"the curriculum sampler is bound to {sampler.size} rows but task.train has {len(task.train)}: "
                "call sampler.bind(task.train) before building the RLModule (rlx.train.build does)"
            )
        self.peft = peft
        self.guard = NonFiniteGuard(algo.max_skipped_updates)
        self.val_batch_size = run.val_batch_size
        val_samples = run.val_samples
        if not isinstance(val_samples, int) or isinstance(val_samples, bool) or val_samples < 0:
            raise ConfigError(f"val_samples is a count of completions per held-out prompt, >= 0 (got {val_samples!r})")
        self.val_samples, self.seed = val_samples, run.seed  # sampled held-out completions (rlx.rollout.held_out)
        self.samples_path = Path(run.samples_path) if run.samples_path else None
        self.held_out_path = Path(run.held_out_path) if run.held_out_path else None
        self.val_records: list[dict] = []  # this rank's heldout.jsonl records of the running evaluation
        self.samples_every, self.samples_per_step = run.samples_every, run.samples_per_step
        self.rollout = rollout = experience.rollout
        # rollout.max_staleness > 0: the sampler process and the batches in flight (rlx.rollout.async_collect)
        coupled = isinstance(algo.rollout_correction, NoCorrection)  # no correction: μ is π_old (async_collect)
        self.ahead = AsyncCollect(rollout.max_staleness, coupled) if rollout.max_staleness > 0 else None
        self.before_metrics: dict | None = None  # held-out metrics of the starting policy, kept across resumes
        self.val_tally = EvalTally()  # held-out sums of this rank (rlx.distributed.evaluation)
        self.val_weights = HeldWeights()  # trainer=fsdp: the policy's full weights while it evaluates
        self.fit_validation: tuple[int, dict] | None = None  # (step, held-out metrics) of fit's newest evaluation

    # ---------------------------------------------------------------- data and optimisers
    def train_dataloader(self):
        return DataLoader(StepTicker(), batch_size=None, num_workers=0)  # see StepTicker: ticks, not prompts

    def val_dataloader(self):
        return DataLoader(
            self.task.val,
            batch_size=self.val_batch_size,
            collate_fn=list,
            sampler=eval_sampler(World.current(), self.task.val),
        )  # rank's share, no repeats

    def configure_optimizers(self):
        optimizer = self.algo.optimizer(self.policy.parameters())
        schedule = self.algo.lr_schedule(optimizer, total_steps=max(1, self.trainer.max_steps))
        # The critic's optimiser (constant lr) is the second one: Lightning checkpoints both.
        critic = [] if self.critic is None else [self.algo.critic.optimizer(self.critic.parameters())]
        return [optimizer, *critic], [schedule]

    def _move_reference(self) -> None:
        if self.reference is not None:
            self.reference.to(self.device)

    def configure_model(self) -> None:
        shard_modules(self)  # trainer=fsdp: fully_shard the policy and critic (a no-op under any other strategy)

    def on_fit_start(self) -> None:
        self._move_reference()
        plugin = self.trainer.precision_plugin
        if isinstance(plugin, MixedPrecision) and plugin.scaler is not None:
            raise ConfigError(
                f"trainer.precision={self.trainer.precision} scales the loss for a gradient scaler, "
                "which rlx's several optimiser steps per RL step do not go through. Use "
                "trainer.precision=bf16-mixed or 32-true"
            )
        if self.ahead is not None:
            self.ahead.check(self.ahead.k, World.current().size, self.device, self.sampler.max_rounds)

    def teardown(self, stage: str) -> None:
        if self.ahead is not None:
            self.ahead.close()  # the sampler process ends with the fit (a resumed fit starts a new one)

    # ---------------------------------------------------------------- one RL step
    def training_step(self, tick, batch_idx):  # the tick is unused (StepTicker): global_step is the RL step
        step, started = self.global_step, time.perf_counter()
        self.policy.eval()  # no dropout anywhere in the step, so the ratio is exactly 1 before the first update
        world = World.current()
        with full_weights(self.policy, self.critic):  # trainer=fsdp: unsharded while generating (rlx.distributed)
            batch, stats = self.collect(step)
            shard = take(
                world, batch, self.tokenizer.pad_token_id, self.algo.minibatches, equal=sharded(self.policy)
            )  # this rank's groups
            start = time.perf_counter()
            batch, prepared = prepare(shard.batch, self.algo, self.advantage, self.models)
        prepared["time/prepare"] = time.perf_counter() - start  # reference / old log-prob / value forwards
        start = time.perf_counter()
        losses = self.update(batch)
        losses["time/update"] = time.perf_counter() - start  # every optimiser step of the RL step
        sync = self.algo.ref_sync_steps
        if sync is not None and self.reference is not None and (step + 1) % sync == 0:
            self.reference.refresh(self.policy, self.algo.ref_sync_alpha)  # TR-DPO / TRL sync_ref_model
        losses = mean_over_ranks(world, {**prepared, **losses})  # sums of global-weighted parts
        whole = shard.whole(batch)  # every rank's rows: the step's metrics as one process computes them
        losses.update(throughput(time.perf_counter() - started, int(whole.response_mask.sum())))  # time/step
        losses.update(staleness(whole.policy_version, step))  # rollout/staleness_*: 0 in the synchronous loop
        self.log_step(whole, stats, losses, step)
        self.write_samples(whole, step, shard.ranks())

    @property
    def models(self) -> Models:
        """The policy, reference and critic as one record (rlx.models.parts)."""
        return Models(self.policy, self.reference, self.critic)

    def collect(self, step: int) -> tuple[RolloutBatch, RolloutStats]:
        """The step's batch: generated here (max_staleness 0), or by the sampler process ahead of the update."""
        rollout = Rollout(self.policy, self.tokenizer, self.rollout, self.reward, self.env, self.max_context_tokens)
        if self.ahead is not None:  # rollout.max_staleness > 0 (rlx.rollout.async_collect)
            return self.ahead.collect(step, rollout, self.sampler, self.task.train, self.rollout_config(), self.seed)
        self.sampler.begin_step(step)
        return collect(rollout, self.sampler, self.task.train, self.rollout_config())

    def rollout_config(self) -> RolloutConfig:
        algo = self.algo
        return RolloutConfig(
            algo.prompts_per_step,
            algo.group_size,
            self.task.max_new_tokens,
            algo.temperature,
            algo.generation_batch_size,
        )

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        """Every optimiser update of this RL step, then one counted Lightning step.

        Lightning (manual optimisation) counts each LightningOptimizer.step() as a global step, but an RL step
        makes algo.update_epochs × algo.minibatches policy updates (and as many critic updates). They run on the
        plain torch optimisers, which Lightning's public `optimizers(use_pl_optimizer=False)` returns; then the
        RL step is counted by exactly one LightningOptimizer.step() with every gradient cleared, which changes
        no weight and no optimiser state (torch optimisers skip parameters without a gradient). So
        trainer.global_step, max_steps and every_n_train_steps count RL steps. A gradient scaler would not see
        the plain steps: on_fit_start refuses 16-bit precision with a scaler.
        """
        optimizers = self.optimizers(use_pl_optimizer=False)
        optimizer, *critic_optimizer = optimizers if isinstance(optimizers, list) else [optimizers]
        # Train mode, where transformers' gradient checkpointing and LoRA's adapter dropout act; the model's own
        # dropout was switched off at load (rlx.models.loading.disable_dropout), so the ratio stays exactly 1.
        self.policy.train()
        optimisation = Optimisation(
            optimizer, self.manual_backward, self.guard, critic_optimizer[0] if critic_optimizer else None
        )
        losses = update(batch, self.algo, self.models, optimisation)
        counted = self.optimizers()
        counted = counted[0] if isinstance(counted, list) else counted
        counted.zero_grad(set_to_none=True)
        counted.step()
        self.schedule().step()
        return losses

    def schedule(self) -> LRScheduler:
        """The policy's learning-rate schedule: configure_optimizers returns exactly one."""
        schedule = self.lr_schedulers()
        assert isinstance(schedule, LRScheduler), schedule
        return schedule

    # ---------------------------------------------------------------- logging
    def log_step(self, batch: RolloutBatch, stats: RolloutStats, losses: dict[str, float], step: int) -> None:
        """The step's metrics (rlx.step_log) to the loggers: metrics.csv's row."""
        optim = {"optim/lr": self.schedule().get_last_lr()[0], "train/skipped_updates": float(self.guard.skipped)}
        sampler = self.sampler.metrics()
        if isinstance(self.env, EpisodeDriver):  # env=verifiers: its drift and error counts (env/...)
            sampler = {**sampler, **self.env.metrics()}
        metrics = step_metrics(batch, stats, losses, optim, sampler)
        # (perf) to the loggers and callback_metrics directly: Lightning's self.log costs 10 ms a step here
        # (rlx.callbacks.step_metrics); Lightning's own progress bar, where one is shown, still gets the three it
        # shows through self.log (3.6 ms a step at the tiny size, so not without a bar: nothing else reads them)
        publish_step_metrics(self.trainer, metrics, step)
        if self.trainer.progress_bar_callback is not None:
            shown = {k: v for k, v in metrics.items() if k in ("reward/mean", "loss/kl", "loss/clipfrac")}
            self.log_dict(shown, on_step=True, prog_bar=True, logger=False, batch_size=1)

    def write_samples(self, batch: RolloutBatch, step: int, ranks: list[int]) -> None:
        """Every `samples_every` steps, `samples_per_step` completions to samples.jsonl (rlx.samples); `ranks[i]`:
        the rank that trained row i; rank 0 alone writes (the batch holds every rank's rows)."""
        if self.samples_path is None or step % self.samples_every or not World.current().is_zero:
            return
        fields = reference_fields(self.reward)
        append_samples(self.samples_path, batch, step, ranks, self.task.train, fields, self.samples_per_step)

    # ---------------------------------------------------------------- held-out evaluation
    def on_validation_start(self) -> None:
        self._move_reference()

    def on_validation_epoch_start(self) -> None:
        self.val_tally.reset()
        self.val_records = []
        self.val_weights.hold(self.policy)  # trainer=fsdp: ranks decode different numbers of batches

    def validation_step(self, rows: list[dict], batch_idx: int) -> None:
        chunk = self.algo.generation_batch_size  # the KV cache holds one chunk at a time
        if runs_episodes(self.env):  # whole episodes: through the turn loop, or the environment's own
            rollout = Rollout(self.policy, self.tokenizer, self.rollout, self.reward, self.env, self.max_context_tokens)
            evaluate = partial(held_out_episodes, rollout, rows, self.task.max_new_tokens, chunk)
        else:  # one answer per row, scored by the reward
            decode = (self.rollout, self.policy, self.tokenizer, self.reward, rows, self.task.max_new_tokens)
            evaluate = partial(held_out_verdicts, *decode, chunk)
        greedy = evaluate()
        rewards = torch.tensor([float(v.reward) for v in greedy.verdicts])
        self.val_tally.add(torch.tensor(passed(greedy.verdicts), dtype=torch.float32), rewards)
        sampled = None
        if self.val_samples:
            where = (self.seed, self.global_step, World.current().rank, batch_idx)
            sampled = evaluate(samples=self.val_samples, temperature=self.algo.temperature, seed=where)
            self.val_tally.add_sampled(torch.tensor(passed(sampled.verdicts), dtype=torch.float32))
        self.val_records += held_out_records(self.global_step, rows, greedy, sampled)

    def on_validation_epoch_end(self) -> None:
        # sums over every rank's rows / the true count: not Lightning's mean of the ranks' means
        self.val_weights.release()
        world = World.current()
        results = self.val_tally.results(world, sampled=self.val_samples > 0)
        if self.held_out_path is not None:
            records = [r for part in world.gather(self.val_records) for r in part]  # every rank's rows
            if world.is_zero and not self.trainer.sanity_checking:
                append_records(self.held_out_path, records)
        if self.trainer.state.fn == "fit" and not self.trainer.sanity_checking:
            self.fit_validation = (self.global_step, dict(results))  # rlx.train reuses the last step's as `after`
        self.log("val/accuracy", results.pop("val/accuracy"), prog_bar=True, sync_dist=True)
        self.log_dict(results, sync_dist=True)  # equal on every rank: the sync averages equal values

    # ---------------------------------------------------------------- checkpoints
    # Lightning saves the weights, optimisers, schedules and step; the module adds what it alone holds
    # (rlx.module_state).
    def stateful_parts(self) -> dict[str, Stateful]:
        return {"sampler": self.sampler, "advantage": self.advantage, "guard": self.guard, "entropy": self.algo.entropy}

    def frozen_reference(self) -> FrozenReference | None:
        """The reference when it is a copy of its own (peft=lora's is the policy with its adapters off)."""
        return self.reference if isinstance(self.reference, FrozenReference) else None

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # a reference that algo.ref_sync_steps moves toward the policy is no longer the starting policy: saved
        refreshed = self.frozen_reference() if self.algo.ref_sync_steps is not None else None
        checkpoint["rlx"] = save_state(self.stateful_parts(), self.before_metrics, refreshed)
        if self.ahead is not None:  # the batches in flight and their versions' weights: regenerated on resume
            checkpoint["rlx"]["async"] = self.ahead.state_dict()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.before_metrics = load_state(checkpoint["rlx"], self.stateful_parts(), self.frozen_reference())
        if self.ahead is not None:
            if "async" not in checkpoint["rlx"]:
                raise ConfigError(
                    f"rollout.max_staleness={self.ahead.k}: this checkpoint was written by a synchronous run, which "
                    "holds no batches in flight; resume it with rollout.max_staleness=0"
                )
            self.ahead.load_state_dict(checkpoint["rlx"]["async"])
