"""The trainer's side of `rollout.max_staleness = k > 0`: admit each step's batch to the sampler process k steps
ahead, take step s's batch when it arrives, score and assemble it with the synchronous loop's own code
(rlx.rollout.collect.collect), and checkpoint what is in flight.

At the start of step s (rlx.rollout.staleness): every batch t ≤ s + k not yet admitted is admitted: the
curriculum draws its prompts (`begin_step(t)`, `sample`), and a Job goes to the sampler with version
v(t) = max(0, t − k)'s trainable weights (a copy of the current weights: a newly admitted batch's version is
always the current one). Then the trainer waits for batch s (`time/wait_trainer`), which the sampler made while
the trainer updated on the batches before it, and scores it here: the rewards keep running in the trainer's
process, where their sandboxes and verifier workers live. The Generations are handed to `collect` through a
generator that returns them in order (`Delivered`), so rounds, chunks, scoring, INFRA handling and statistics
are the synchronous step's, line for line.

Behaviour policy and correction: every row is tagged with its version (`RolloutBatch.policy_version`) and keeps
the sampler's log-probs as μ, the behaviour policy (`sampler_logp`). Two cases, by the rollout correction:
- a correction is chosen (rollout_correction=token_tis, ...): decoupled PPO (Hilton et al. 2021, arXiv
  2110.00641; AReaL's staleness-enhanced PPO). μ is not offered as π_old (`Generation.reusable` is cleared), so
  rlx.update.prepare runs the current policy's forward for π_old; PPO's ratio is π_θ / π_old and the correction's
  weight is built from π_old / μ, the importance ratio of the current policy to the version that sampled (not
  only to that version's own forward). The gap is measured every step (rollout/mismatch_*).
- rollout_correction=none: coupled PPO, μ is π_old (as the synchronous loop reuses the engine's log-probs): the
  clipped ratio π_θ / μ is to the behaviour policy itself, so the clip also bounds the staleness, and the
  trainer runs no extra forward (the whole point of overlapping, where generation is a small part of the step).
  No mismatch is measured (there is no second log-prob to compare).

Exact resume: a checkpoint after step s holds the admitted batches s+1 … s+k (their prompts and versions) and
those versions' weights; a resumed run admits nothing twice (the curriculum state already drew them) and
sends the same jobs again, which the sampler regenerates bit for bit (rlx.rollout.async_sampler).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from rlx.errors import ConfigError
from rlx.rollout.async_sampler import Job, Sampled, SamplerProcess, snapshot
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import Rollout, RolloutConfig, RolloutStats, collect
from rlx.rollout.generation import Generation, GenerationRequest, OnFinished
from rlx.rollout.staleness import admissions, sampling_version


@dataclass(frozen=True)
class Admitted:
    version: int
    indices: list[int]  # the prompts the curriculum drew for the batch (rows of task.train)


class Replay:
    """The curriculum as `collect` drives it, for one admitted batch: `sample` returns the prompts drawn at
    admission; scores go to the real curriculum. One round per step (max_staleness > 0 refuses more)."""

    max_rounds = 1

    def __init__(self, sampler, indices: list[int]) -> None:
        self.sampler, self.indices = sampler, indices

    def sample(self, count: int) -> list[int]:
        return list(self.indices)

    def observe(self, indices: list[int], group_rewards: list[list[float]]) -> None:
        self.sampler.observe(indices, group_rewards)

    def keep(self, group_rewards: list[list[float]]) -> list[bool]:
        return self.sampler.keep(group_rewards)


class Delivered:
    """A Generator that returns the sampler's Generations for the chunks `collect` asks for, in order."""

    overlap_scoring = False  # the completions are all there: nothing to overlap
    max_staleness = 0  # (collect's view: it runs in the trainer's process)

    def __init__(self, chunks: list[list[str]], generations: list[Generation]) -> None:
        self.pending = list(zip(chunks, generations, strict=True))

    def __call__(
        self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None
    ) -> Generation:
        chunk, generation = self.pending.pop(0)
        if list(request.prompts) != chunk:
            raise RuntimeError("the sampler's batch is for other prompts than the step's (admission out of order)")
        return generation


def throughput(seconds: float, tokens: int) -> dict[str, float]:
    """time/step (wall seconds of the RL step), time/steps_per_hour = 3600 / time/step and time/tok_per_s (the
    step's completion tokens per wall second: generation, scoring and training together)."""
    seconds = max(seconds, 1e-9)
    return {"time/step": seconds, "time/steps_per_hour": 3600.0 / seconds, "time/tok_per_s": tokens / seconds}


class AsyncCollect:
    """Args: max_staleness k ≥ 1; coupled: μ stands for π_old (rollout_correction=none), else the trainer's
    forward gives π_old (decoupled). The sampler process runs the engine of the Rollout that `collect` is given."""

    def __init__(self, max_staleness: int, coupled: bool = False) -> None:
        self.k, self.coupled = max_staleness, coupled
        self.process: SamplerProcess | None = None
        self.admitted: dict[int, Admitted] = {}  # in flight: step → its prompts and version
        self.admitted_through = -1  # every batch ≤ this step was admitted
        self.weights: dict[int, list[Tensor]] = {}  # version → trainable weights, for the versions in flight
        self.sent: int | None = None  # the version of the last job sent to this process

    @staticmethod
    def check(max_staleness: int, world_size: int, device: torch.device, max_rounds: int) -> None:
        """What max_staleness > 0 does not support fails at the start of fit, naming the fix."""
        fix = "or set rollout.max_staleness=0"
        if world_size > 1:
            raise ConfigError(
                f"rollout.max_staleness={max_staleness} runs one sampler process beside one trainer process; "
                f"this run has {world_size} ranks: use trainer=default (one process), {fix}"
            )
        if device.type != "cpu":
            raise ConfigError(
                f"rollout.max_staleness={max_staleness} runs the sampler in a CPU worker process; the policy is on "
                f"{device.type}: use trainer.accelerator=cpu, {fix}"
            )
        if max_rounds != 1:
            raise ConfigError(
                f"rollout.max_staleness={max_staleness} admits one generation round per step ahead of time, but "
                f"the curriculum may sample up to {max_rounds} rounds (dynamic sampling): set "
                f"curriculum.max_rounds=1, use curriculum=uniform, {fix}"
            )

    def collect(
        self, step: int, rollout: Rollout, sampler, rows, config: RolloutConfig, seed: int
    ) -> tuple[RolloutBatch, RolloutStats]:
        """Step `step`'s batch, from the sampler process; admits (and sends the current weights for) the batches
        that become due, up to step + k. `rollout.engine` is what the sampler process runs."""
        start = time.perf_counter()
        policy = rollout.policy
        if self.process is None:
            self.process = SamplerProcess(policy, rollout.tokenizer, rollout.engine)
            for t in sorted(self.admitted):  # resumed: the in-flight batches again, from their own versions
                self.submit(t, rows, config, seed)
        sync = 0.0
        for t in admissions(step, self.k, self.admitted_through):
            version = sampling_version(t, self.k)
            assert version == step, "a batch is admitted when its version is the current one"
            if version not in self.weights:
                pushed = time.perf_counter()
                self.weights[version] = snapshot(policy)
                sync += time.perf_counter() - pushed
            sampler.begin_step(t)
            self.admitted[t] = Admitted(version, sampler.sample(config.prompts_per_step))
            self.admitted_through = t
            self.submit(t, rows, config, seed)
        waited = time.perf_counter()
        sampled = self.process.receive()
        waited = time.perf_counter() - waited
        if sampled.step != step:
            raise RuntimeError(f"the sampler sent step {sampled.step}'s batch at step {step}")
        admitted = self.admitted.pop(step)
        batch, stats = self.assemble(rollout, sampled, admitted, sampler, rows, config)
        self.weights = {v: w for v, w in self.weights.items() if any(a.version == v for a in self.admitted.values())}
        engine = {"time/wait_trainer": waited, "time/wait_sampler": sampled.idle, "time/weight_sync": sync}
        stats = replace(
            stats,
            seconds=time.perf_counter() - start - waited + sampled.seconds,  # generating + scoring, not waiting
            generate_seconds=sampled.seconds,
            engine={**stats.engine, **engine},
        )
        return batch, stats

    def submit(self, step: int, rows, config: RolloutConfig, seed: int) -> None:
        assert self.process is not None
        admitted = self.admitted[step]
        chunks = [[rows[i]["prompt"] for i in chunk] for chunk in config.chunks(admitted.indices)]
        weights = self.weights[admitted.version] if admitted.version != self.sent else None
        self.process.submit(
            Job(
                step,
                admitted.version,
                seed,
                chunks,
                config.max_new_tokens,
                config.temperature,
                config.group_size,
                weights,
            )
        )
        self.sent = admitted.version

    def assemble(self, rollout: Rollout, sampled: Sampled, admitted: Admitted, sampler, rows, config: RolloutConfig):
        """`collect` over the delivered Generations, rows tagged with their version. Decoupled, the sampler's
        log-probs are μ only, never π_old (not even at step 0, whose version is the current one: the mismatch
        columns exist from the first row); coupled, they are π_old as well, wherever the engine vouches for them
        (float32, eval mode: Generation.reusable as the worker set it)."""
        generations = [g if self.coupled else replace(g, reusable=False) for g in sampled.generations]
        chunks = [[rows[i]["prompt"] for i in chunk] for chunk in config.chunks(admitted.indices)]
        delivered = Delivered(chunks, generations)
        batch, stats = collect(replace(rollout, engine=delivered), Replay(sampler, admitted.indices), rows, config)
        batch.policy_version = torch.full_like(batch.prompt_index, sampled.version)  # [N]
        return batch, stats

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None
            self.sent = None

    # ------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict:
        return {
            "admitted": {t: {"version": a.version, "indices": list(a.indices)} for t, a in self.admitted.items()},
            "admitted_through": self.admitted_through,
            "weights": {v: [w.clone() for w in ws] for v, ws in self.weights.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.close()
        self.admitted = {int(t): Admitted(int(a["version"]), list(a["indices"])) for t, a in state["admitted"].items()}
        self.admitted_through = int(state["admitted_through"])
        self.weights = {int(v): list(ws) for v, ws in state["weights"].items()}
