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

import json
import random
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch import LightningModule
from lightning.pytorch.plugins.precision import MixedPrecision
from torch.utils.data import DataLoader, IterableDataset

from rlx.algos.spec import Algorithm
from rlx.errors import ConfigError
from rlx.models.reference import FrozenReference
from rlx.rewards.base import Status
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import collect, score
from rlx.rollout.generate import generate
from rlx.update import NonFiniteGuard, prepare, update


def numpy_rng_state() -> dict:
    """numpy's RNG state as tensors and numbers, so checkpoints load with torch.load(weights_only=True)."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "gauss": float(gauss)}


def set_numpy_rng_state(state: dict) -> None:
    keys = state["keys"].numpy().astype(np.uint32)
    np.random.set_state((state["name"], keys, state["pos"], state["has_gauss"], state["gauss"]))


class StepTicker(IterableDataset):
    """The training 'data' is the step counter: prompts come from the curriculum sampler, which the
    module owns so that its state is checkpointed with the model and never prefetched ahead."""

    def __iter__(self):
        step = 0
        while True:
            yield step
            step += 1


class RLModule(LightningModule):
    def __init__(self, policy, tokenizer, task, reward, advantage, algo: Algorithm, sampler, *,
                 reference: FrozenReference | None = None, critic=None, val_batch_size: int = 256,
                 samples_path: str | None = None, samples_every: int = 10, samples_per_step: int = 4) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.policy = policy
        self.critic = critic
        self.reference = reference  # a plain holder, not a submodule: in no state dict, moved in on_fit_start
        self.tokenizer, self.task, self.reward = tokenizer, task, reward
        self.advantage, self.algo, self.sampler = advantage, algo, sampler
        self.advantage.bind(tokenizer)
        self.sampler.bind(task.train)
        self.guard = NonFiniteGuard(algo.max_skipped_updates)
        self.val_batch_size = val_batch_size
        self.samples_path = Path(samples_path) if samples_path else None
        self.samples_every, self.samples_per_step = samples_every, samples_per_step
        self.before_metrics: dict | None = None  # held-out metrics of the starting policy, kept across resumes

    # ---------------------------------------------------------------- data and optimisers
    def train_dataloader(self):
        return DataLoader(StepTicker(), batch_size=None)

    def val_dataloader(self):
        return DataLoader(self.task.val, batch_size=self.val_batch_size, collate_fn=list)

    def configure_optimizers(self):
        optimizer = self.algo.optimizer(self.policy.parameters())
        schedule = self.algo.lr_schedule(optimizer, total_steps=max(1, self.trainer.max_steps))
        # The critic's optimiser (constant lr) is the second one: Lightning checkpoints both.
        critic = [] if self.critic is None else [self.algo.critic.optimizer(self.critic.parameters())]
        return [optimizer, *critic], [schedule]

    def _move_reference(self) -> None:
        if self.reference is not None:
            self.reference.to(self.device)

    def on_fit_start(self) -> None:
        self._move_reference()
        plugin = self.trainer.precision_plugin
        if isinstance(plugin, MixedPrecision) and plugin.scaler is not None:
            raise ConfigError(f"trainer.precision={self.trainer.precision} scales the loss for a gradient scaler, "
                              "which rlx's several optimiser steps per RL step do not go through. Use "
                              "trainer.precision=bf16-mixed or 32-true")

    # ---------------------------------------------------------------- one RL step
    def training_step(self, tick, batch_idx):  # the ticker's value is unused: global_step is the RL step
        step = self.global_step
        self.policy.eval()  # no dropout anywhere in the step, so the ratio is exactly 1 before the first update
        self.sampler.begin_step(step)
        batch, stats = collect(self.policy, self.tokenizer, self.reward, self.sampler, self.task.train,
                               self.algo.prompts_per_step, self.algo.group_size, self.task.max_new_tokens,
                               self.algo.temperature, self.tokenizer.pad_token_id)
        batch, prepared = prepare(batch, self.algo, self.advantage, self.policy, self.reference, self.critic)
        losses = self.update(batch)
        self.log_step(batch, stats, {**prepared, **losses})
        self.write_samples(batch, step)

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
        losses = update(batch, self.algo, self.policy, optimizer, self.critic,
                        critic_optimizer[0] if critic_optimizer else None, self.manual_backward, self.guard)
        counted = self.optimizers()
        counted = counted[0] if isinstance(counted, list) else counted
        counted.zero_grad(set_to_none=True)
        counted.step()
        self.lr_schedulers().step()
        return losses

    # ---------------------------------------------------------------- logging
    def log_step(self, batch: RolloutBatch, stats, losses: dict[str, float]) -> None:
        valid = batch.valid  # scored samples (INFRA excluded); truncated ones count here even if filtered out
        mask = batch.response_mask.float()
        adv = batch.advantages[batch.loss_mask() > 0]  # every trained response token
        if adv.numel() == 0:
            adv = torch.zeros(1, device=batch.rewards.device)
        n = max(1, len(batch.statuses))
        metrics = {
            "reward/mean": batch.rewards[valid].mean() if valid.any() else torch.tensor(0.0),
            "reward/zero_std_frac": stats.zero_std_groups / max(1, stats.groups_generated),
            "reward/zero_std_frac_batch": stats.batch_zero_std_groups / max(1, stats.batch_groups),
            "reward/infra_frac": stats.status_counts.get(Status.INFRA.value, 0) / max(1, sum(stats.status_counts.values())),
            "adv/mean": adv.mean(),
            "adv/std": adv.std(unbiased=False),
            "rollout/length_mean": mask.sum(-1).mean(),
            "rollout/truncated_frac": batch.truncated.float().mean(),
            "rollout/tok_per_s": stats.tokens / max(stats.seconds, 1e-9),
            "rollout/seconds": stats.seconds,
            "rollout/rounds": float(stats.rounds),
            "optim/lr": self.lr_schedulers().get_last_lr()[0],
            "train/skipped_updates": float(self.guard.skipped),
            "train/trained_frac": batch.sample_mask.float().mean(),
            **{f"reward/{k}": v[valid].float().mean() for k, v in batch.components.items() if valid.any()},
            **{f"reward/status_{s.lower()}": sum(1 for x in batch.statuses if x == s) / n
               for s in set(batch.statuses)},
            **self.sampler.metrics(),
            **losses,
        }
        shown = {"reward/mean", "loss/kl", "loss/clipfrac"}
        self.log_dict({k: v for k, v in metrics.items() if k not in shown}, on_step=True, batch_size=1)
        self.log_dict({k: v for k, v in metrics.items() if k in shown}, on_step=True, prog_bar=True,
                      batch_size=1)

    def write_samples(self, batch: RolloutBatch, step: int) -> None:
        if self.samples_path is None or step % self.samples_every:
            return
        rows = self.task.train
        with self.samples_path.open("a", encoding="utf-8") as out:
            for i in range(min(self.samples_per_step, len(batch.completions))):
                out.write(json.dumps({
                    "step": step, "prompt": rows[int(batch.prompt_index[i])]["prompt"],
                    "completion": batch.completions[i], "reward": float(batch.rewards[i]),
                    "status": batch.statuses[i],
                }) + "\n")

    # ---------------------------------------------------------------- held-out evaluation
    def on_validation_start(self) -> None:
        self._move_reference()

    def validation_step(self, rows: list[dict], batch_idx: int) -> None:
        texts = generate(self.policy, self.tokenizer, [r["prompt"] for r in rows], self.task.max_new_tokens,
                         1.0, greedy=True)[-1]
        verdicts = score(self.reward, texts, rows)
        passed = torch.tensor([v.status == Status.PASS for v in verdicts], dtype=torch.float32)
        rewards = torch.tensor([float(v.reward) for v in verdicts])
        self.log("val/accuracy", passed.mean(), batch_size=len(rows), prog_bar=True)
        self.log("val/reward", rewards.mean(), batch_size=len(rows))

    # ---------------------------------------------------------------- checkpoints
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["rlx"] = {
            "sampler": self.sampler.state_dict(),
            "advantage": self.advantage.state_dict(),
            "before": self.before_metrics,
            "rng": {"python": random.getstate(), "numpy": numpy_rng_state(),
                    "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        state = checkpoint["rlx"]
        self.sampler.load_state_dict(state["sampler"])
        self.advantage.load_state_dict(state["advantage"])
        self.before_metrics = state["before"]
        random.setstate(state["rng"]["python"])
        set_numpy_rng_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
        if state["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
