"""Pieces the algorithm tests share: the real `algo` node composed from conf/ (shrunk by overrides), a scripted
reward, an optimiser stand-in that records the gradient it is asked to apply, and a bare Lightning trainer."""

from __future__ import annotations

import torch

from rlx.checks import build_node, check_algorithm
from rlx.models.adapters import FullFineTuning
from rlx.models.parts import Models
from rlx.module import Experience, RLModule, RunKeys
from rlx.rewards.base import Status, Verdict
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import Rollout, RolloutConfig, generate_and_score
from rlx.rollout.generate import HFGenerate


def bare_trainer(max_steps: int, progress_bar: bool = False):
    """A CPU Lightning trainer that runs only the RL steps: no logger, checkpoints or validation, and Lightning's
    progress bar only with `progress_bar`."""
    import lightning.pytorch as pl

    return pl.Trainer(
        max_steps=max_steps,
        logger=False,
        enable_checkpointing=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        enable_progress_bar=progress_bar,
        enable_model_summary=False,
        accelerator="cpu",
    )


def bare_module(policy, tokenizer, task, reward, advantage, algo, sampler, **parts) -> RLModule:
    """An RLModule wired by hand as rlx.train.build wires one (the sampler bound to the training rows, full
    fine-tuning), sampling with transformers' generate (rollout=hf), writing no samples.jsonl; the run keys are
    conf/config.yaml's. `parts`: reference=, critic=."""
    sampler.bind(task.train)
    experience = Experience(tokenizer, task, reward, sampler, HFGenerate(overlap_scoring=True))
    run = RunKeys(val_batch_size=256, val_samples=0, seed=0, samples_every=10, samples_per_step=4)
    return RLModule(Models(policy, **parts), experience, algo, advantage, run, peft=FullFineTuning())


def scripted_batch(model, tokenizer, rewards, rows, prompts: list[int], config: RolloutConfig) -> RolloutBatch:
    """One round of `prompts` (indices into `rows`), sampled with transformers' generate (rollout=hf) and
    scored `rewards` in order, whatever the completions."""
    rollout = Rollout(model, tokenizer, HFGenerate(overlap_scoring=True), ScriptedReward(rewards))
    return generate_and_score(rollout, rows, prompts, config)


def compose_algo(cfg_factory, *overrides):
    """(algo, advantage) built and checked from the real config with `overrides`."""
    cfg = cfg_factory(*overrides)
    algo, advantage = build_node(cfg, "algo"), build_node(cfg, "advantage")
    check_algorithm(algo, advantage, has_critic=algo.critic is not None)
    return algo, advantage


class ScriptedReward:
    """Returns the given rewards in order, whatever the completions."""

    required_fields = ()

    def __init__(self, rewards):
        self.rewards = rewards

    def __call__(self, completions, rows):
        return [Verdict(r, Status.PASS if r else Status.FAIL) for r in self.rewards[: len(completions)]]


class GradCapture:
    """An optimiser that applies nothing and keeps the flattened gradient of each step it is asked to take."""

    def __init__(self, params):
        self.params = list(params)
        self.grads: list[torch.Tensor] = []

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        self.grads.append(
            torch.cat([p.grad.flatten() if p.grad is not None else torch.zeros_like(p).flatten() for p in self.params])
        )


def off_policy_steps(model, batch: RolloutBatch, algo, advantage, reference=None, steps: int = 1):
    """`steps` policy_step calls on one off-policy minibatch of `batch` (rows 0, 2, 3, 5, 6, 7, 8, 11; the old
    log-probs shifted by −0.4…0.4, so ratios are not 1 and the clip acts), recording gradients without applying
    them. Returns (the last step's metrics, its gradient [P], the minibatch)."""
    from dataclasses import replace

    from rlx.update import NonFiniteGuard, Optimisation, policy_step, prepare

    prepared, _ = prepare(batch, algo, advantage, Models(model, reference))
    mb = prepared.select(torch.tensor([0, 2, 3, 5, 6, 7, 8, 11]))
    shift = torch.linspace(-0.4, 0.4, mb.old_logp.numel(), dtype=torch.float64).view_as(mb.old_logp)
    mb = replace(mb, old_logp=mb.old_logp + shift)
    optimizer = GradCapture(model.parameters())
    torch.manual_seed(0)  # Clip-Cov's random choice, the same in every call
    metrics: dict = {}
    for _ in range(steps):
        metrics = policy_step(mb, algo, model, Optimisation(optimizer, lambda loss: loss.backward(), NonFiniteGuard(1)))
    return metrics, optimizer.grads[-1], mb
