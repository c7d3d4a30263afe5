"""RLModule: the policy, an optional critic and a frozen reference, driven by Lightning (manual optimisation).

One training step reads top to bottom:
    collect  — sample prompts, generate a group per prompt with the KV cache, score (rlx.rollout.collect)
    prepare  — reward shaping, reference / sampling-policy log-probs, per-token rewards, critic values,
               advantages (the `advantage` group)
    update   — μ epochs × minibatches of the policy loss + β·KL, one optimiser step per minibatch; with a
               critic (PPO) also the value loss, stepped by the critic's own optimiser
`trainer.global_step` counts RL steps (not optimiser steps), so `trainer.max_steps` is the number of RL steps.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch import LightningModule
from torch.utils.data import DataLoader, IterableDataset

from rlx.algos.aggregation import token_mean
from rlx.algos.spec import Algorithm
from rlx.rewards.base import Status
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import RolloutConfig, collect, score
from rlx.rollout.engine import Generator
from rlx.rollout.generate import HFGenerate, sequence_logprobs


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
                 reference=None, critic=None, val_batch_size: int = 256, samples_path: str | None = None,
                 samples_every: int = 10, samples_per_step: int = 4, rollout: Generator | None = None) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.policy = policy
        self.critic = critic
        # The reference is frozen and restorable from its source, so it is kept out of the state dict
        # (checkpoints stay policy-sized) and out of Lightning's device moves (see on_fit_start).
        self.__dict__["reference"] = reference
        if reference is not None:
            reference.requires_grad_(False).eval()
        self.tokenizer, self.task, self.reward = tokenizer, task, reward
        self.advantage, self.algo, self.sampler = advantage, algo, sampler
        self.advantage.bind(tokenizer)
        self.sampler.bind(task.train)
        self.val_batch_size = val_batch_size
        self.samples_path = Path(samples_path) if samples_path else None
        self.samples_every, self.samples_per_step = samples_every, samples_per_step
        # The `rollout` group's generator (train.build passes it); a module built by hand samples with HF generate.
        self.rollout = rollout if rollout is not None else HFGenerate()
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

    # ---------------------------------------------------------------- one RL step
    def training_step(self, tick, batch_idx):  # the ticker's value is unused: global_step is the RL step
        step = self.global_step  # read now: global_step advances inside update
        self.policy.eval()  # sampling and log-probs without dropout, so ratios start at exactly 1
        self.sampler.begin_step(step)
        batch, stats = collect(self.policy, self.tokenizer, self.reward, self.sampler, self.task.train, self.rollout,
                               self.rollout_config())
        self.prepare(batch)
        losses = self.update(batch)
        self.log_step(batch, stats, losses)
        self.write_samples(batch, step)

    def rollout_config(self) -> RolloutConfig:
        algo = self.algo
        return RolloutConfig(algo.prompts_per_step, algo.group_size, self.task.max_new_tokens, algo.temperature,
                             algo.generation_batch_size)

    @torch.no_grad()
    def prepare(self, batch: RolloutBatch) -> None:
        algo, t = self.algo, self.algo.temperature
        args = (batch.input_ids, batch.attention_mask, batch.response_width, t)
        shaped, batch.valid = algo.shaping(batch)  # [N], [N] clipped / length-penalised; overlong-filtered
        if algo.uses_reference:
            batch.ref_logp = sequence_logprobs(self.reference, *args)  # [N, T]
        # One epoch, one minibatch: the first update's own log-probs are the sampling policy's (the weights
        # have not moved), so that forward pass is not run twice.
        if algo.update_epochs > 1 or algo.minibatches > 1 or (algo.uses_reference and algo.kl_in_reward):
            batch.old_logp = sequence_logprobs(self.policy, *args)  # [N, T]
        mask = batch.response_mask.float()  # [N, T]
        last = (batch.response_mask.sum(-1) - 1).clamp(min=0)  # [N] index of each completion's last token
        token_rewards = torch.zeros_like(mask)  # [N, T]
        token_rewards[torch.arange(len(last), device=last.device), last] = shaped * batch.valid
        if algo.uses_reference and algo.kl_in_reward:
            token_rewards -= algo.beta * algo.kl(batch.old_logp, batch.ref_logp) * mask  # [N, T]
        batch.token_rewards = token_rewards
        if self.critic is not None:
            batch.values = self.critic(batch.input_ids, batch.attention_mask, batch.response_width)  # [N, T]
        batch.advantages, batch.returns = self.advantage(batch)  # [N, T], [N, T] | None

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        algo = self.algo
        optimizers = self.optimizers()
        optimizer, *critic_optimizer = optimizers if isinstance(optimizers, list) else [optimizers]
        schedule = self.lr_schedulers()
        n = batch.input_ids.shape[0]
        totals: dict[str, float] = {}
        updates = algo.update_epochs * algo.minibatches
        done = 0
        for _ in range(algo.update_epochs):
            order = torch.randperm(n, device=batch.input_ids.device)
            for rows in order.chunk(algo.minibatches):
                mb = batch.select(rows)
                metrics = self.policy_objective(mb)
                loss = metrics.pop("loss")
                optimizer.zero_grad(set_to_none=True)
                self.manual_backward(loss)
                metrics["optim/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.policy.parameters(),
                                                                            algo.max_grad_norm))
                done += 1
                # Only the last optimiser step of the RL step goes through Lightning's wrapper, which is
                # what advances trainer.global_step: one global step per RL step.
                (optimizer if done == updates else optimizer.optimizer).step()
                if critic_optimizer:
                    metrics.update(self.critic_update(mb, critic_optimizer[0].optimizer))
                for key, value in metrics.items():
                    totals[key] = totals.get(key, 0.0) + float(value) / updates
        schedule.step()
        return totals

    def policy_objective(self, mb: RolloutBatch) -> dict:
        algo = self.algo
        logp = sequence_logprobs(self.policy, mb.input_ids, mb.attention_mask, mb.response_width,
                                 algo.temperature)  # [n, T]
        old_logp = mb.old_logp if mb.old_logp is not None else logp.detach()  # [n, T]
        mask = mb.response_mask * mb.valid[:, None]  # [n, T] INFRA samples carry no gradient
        policy_mat, clipped = algo.policy_loss(logp, old_logp, mb.advantages)  # [n, T], [n, T]
        policy_loss = algo.aggregate(policy_mat, mask)
        loss = policy_loss
        metrics = {"loss/policy": policy_loss.detach()}
        if algo.uses_reference and not algo.kl_in_reward:
            kl_mat = algo.kl(logp, mb.ref_logp)  # [n, T]
            kl_loss = algo.aggregate(kl_mat, mask)
            loss = loss + algo.beta * kl_loss
            metrics["loss/kl"] = kl_loss.detach()
        elif algo.uses_reference:
            metrics["loss/kl"] = algo.aggregate(algo.kl(logp, mb.ref_logp), mask).detach()
        log_ratio = (logp - old_logp).detach()  # [n, T]
        metrics["loss/clipfrac"] = token_mean(clipped.float(), mask)
        metrics["loss/approx_kl"] = token_mean(torch.exp(log_ratio) - 1 - log_ratio, mask)  # k3(π_old ‖ π_θ)
        metrics["loss"] = loss
        return metrics

    def critic_update(self, mb: RolloutBatch, optimizer) -> dict:
        """One step of the critic on the value loss (its raw optimiser: global_step counts policy steps)."""
        values = self.critic(mb.input_ids, mb.attention_mask, mb.response_width)  # [n, T]
        mask = mb.response_mask * mb.valid[:, None]  # [n, T]
        loss = token_mean(self.algo.critic.loss(values, mb.values, mb.returns), mask)
        optimizer.zero_grad(set_to_none=True)
        self.manual_backward(loss)
        norm = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), self.algo.critic.max_grad_norm)
        optimizer.step()
        return {"loss/value": loss.detach(), "optim/critic_grad_norm": float(norm),
                "critic/value_mean": token_mean(mb.values, mask)}

    # ---------------------------------------------------------------- logging
    def log_step(self, batch: RolloutBatch, stats, losses: dict[str, float]) -> None:
        valid = batch.valid
        mask = batch.response_mask.float()
        adv = batch.advantages[batch.response_mask.bool() & valid[:, None]]  # every scored response token
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
            "time/generate": stats.generate_seconds,  # (perf) wall time inside the rollout engine
            "time/score": stats.score_seconds,  # (perf) time inside the reward, overlapping generation
            "optim/lr": self.lr_schedulers().get_last_lr()[0],
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
        texts = []
        step = self.algo.generation_batch_size or len(rows)  # the KV cache holds one chunk at a time
        for start in range(0, len(rows), step):
            texts += self.rollout(self.policy, self.tokenizer, [r["prompt"] for r in rows[start : start + step]],
                                  self.task.max_new_tokens, 1.0, greedy=True).texts
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
