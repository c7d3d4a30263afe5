"""The sampler process of `rollout.max_staleness > 0`: rlx's rollout engine (or HF generate) in a
torch.multiprocessing worker (spawn) holding its own copy of the policy, fed by a queue of jobs.

Protocol (two queues; every tensor crosses through shared memory, torch.multiprocessing's own path):
    trainer → worker  Job(step, version, seed, chunks, weights)   one per RL step's batch, in step order;
                      None                                         stop
    worker → trainer  Sampled(step, version, generations, seconds, idle)
A job carries the trainable weights of its version (`weights`, in `trainable(policy)` order) when that version
differs from the previous job's: the worker copies them into its policy (`load_weights`, the state_dict-copy_
path every nn.Module supports; under LoRA only the adapters are trainable, so only they travel) and then
generates the job's chunks with the step's seed, exactly as the synchronous step would (rlx.seeding reseeds the
global generators from (seed, step) before generating). So a job's Generations depend on its version's weights,
its prompts and its seed alone: a resumed run regenerates an in-flight batch bit for bit.

The worker runs one torch thread (on the 2-core machine the trainer keeps the other core), exits when its
parent dies (a SIGKILLed trainer leaves no orphan generating forever) and reports every error back to the
trainer instead of hanging it.
"""

from __future__ import annotations

import copy
import logging
import os
import queue
import threading
import time
import traceback
from dataclasses import dataclass

import torch
import torch.multiprocessing as mp
from torch import Tensor

from rlx.errors import RlxError
from rlx.rollout.generation import Generation, GenerationRequest, Generator
from rlx.seeding import seed_step

log = logging.getLogger(__name__)
POLL_S = 0.5  # how often a waiting side checks that the other is alive


class SamplerDied(RlxError):
    """The sampler process failed or exited; its error is in the message."""


@dataclass
class Job:
    step: int  # the RL step whose batch this is
    version: int  # the policy version that samples it (rlx.rollout.staleness.sampling_version)
    seed: int  # the run's seed: the worker reseeds from (seed, step) as the synchronous step does
    chunks: list[list[str]]  # the round's prompts, split as RolloutConfig.chunks splits them
    max_new_tokens: int
    temperature: float
    group_size: int
    weights: list[Tensor] | None  # the version's trainable weights (`snapshot`); None: the previous job's version


@dataclass
class Sampled:
    step: int
    version: int
    generations: list[Generation]  # one per chunk
    seconds: float  # wall time generating (the worker's time/generate)
    idle: float  # seconds the worker waited for this job (and its weights) after finishing the previous one


def trainable(policy: torch.nn.Module) -> list[tuple[str, Tensor]]:
    """The parameters an update changes, in a fixed order: all of them for full fine-tuning, the adapters for
    LoRA (the frozen base never needs sending)."""
    return [(name, p) for name, p in policy.named_parameters() if p.requires_grad]


def snapshot(policy: torch.nn.Module) -> list[Tensor]:
    """A copy of the trainable weights (this version's), detached from the live parameters the next update
    changes: one flat tensor per dtype, in `trainable` order (one shared-memory segment each when sent, not one
    file descriptor per parameter)."""
    groups: dict[torch.dtype, list[Tensor]] = {}
    for _, p in trainable(policy):
        groups.setdefault(p.dtype, []).append(p.detach().reshape(-1))
    return [torch.cat(parts) for parts in groups.values()]  # each [Σ numel of that dtype's parameters]


@torch.no_grad()
def load_weights(policy: torch.nn.Module, names: list[str], flats: list[Tensor]) -> None:
    """Copy a version's weights (`snapshot`'s flat tensors) into the worker's policy, which has the same
    architecture and parameter names."""
    params = dict(policy.named_parameters())
    if any(n not in params for n in names):
        raise SamplerDied("the pushed weights name parameters the sampler's policy does not have")
    dtypes = list(dict.fromkeys(params[n].dtype for n in names))
    sizes = [sum(params[n].numel() for n in names if params[n].dtype == d) for d in dtypes]
    if sizes != [f.numel() for f in flats]:
        raise SamplerDied(f"pushed weights of sizes {[f.numel() for f in flats]}, not the sampler's sizes {sizes}")
    offsets = dict.fromkeys(dtypes, 0)
    for name in names:
        param = params[name]
        flat, start = flats[dtypes.index(param.dtype)], offsets[param.dtype]
        param.copy_(flat[start : start + param.numel()].view_as(param))
        offsets[param.dtype] = start + param.numel()


def watch_parent(parent: int) -> None:
    """End this process when the trainer that started it is gone (its parent pid changes)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="rlx-sampler-watch", daemon=True).start()


def serve(policy, tokenizer, engine: Generator, names: list[str], jobs, results, parent: int) -> None:
    """The worker's loop: take a job, load its weights if new, generate its chunks, send them back."""
    watch_parent(parent)
    torch.set_num_threads(1)
    policy.eval()
    for p in policy.parameters():
        p.requires_grad_(False)
    finished = time.perf_counter()
    while True:
        job = jobs.get()
        if job is None:
            return
        try:
            if job.weights is not None:
                load_weights(policy, names, job.weights)
            idle = time.perf_counter() - finished
            start = time.perf_counter()
            seed_step(job.seed, job.step)
            generations = [
                engine(
                    policy,
                    tokenizer,
                    GenerationRequest(chunk, job.max_new_tokens, job.temperature, repeats=job.group_size),
                )
                for chunk in job.chunks
            ]
            finished = time.perf_counter()
            results.put(Sampled(job.step, job.version, generations, finished - start, idle))
        except Exception:
            results.put(SamplerDied(f"the sampler process failed on step {job.step}:\n{traceback.format_exc()}"))
            return


class SamplerProcess:
    """The trainer's handle on the worker: `submit` jobs in step order, `receive` each step's Sampled in the
    same order, `close` at the end. Started with a private copy of `policy` (its trainable weights are replaced
    by every job's version before use)."""

    def __init__(self, policy: torch.nn.Module, tokenizer, engine: Generator) -> None:
        ctx = mp.get_context("spawn")
        self.names = [name for name, _ in trainable(policy)]
        self.jobs, self.results = ctx.Queue(), ctx.Queue()
        copy = _private_copy(policy)
        self.process = ctx.Process(
            target=serve,
            args=(copy, tokenizer, engine, self.names, self.jobs, self.results, os.getpid()),
            name="rlx-sampler",
            daemon=True,  # also ended at the trainer's normal exit
        )
        self.process.start()
        del copy

    def submit(self, job: Job) -> None:
        self.jobs.put(job)

    def receive(self) -> Sampled:
        """The next batch (blocking); a failed or vanished worker raises SamplerDied."""
        while True:
            try:
                out = self.results.get(timeout=POLL_S)
            except queue.Empty:
                if not self.process.is_alive():
                    raise SamplerDied(
                        f"the sampler process exited (status {self.process.exitcode}) before sending its batch"
                    ) from None
                continue
            if isinstance(out, SamplerDied):
                raise out
            return out

    def close(self) -> None:
        """Stop the worker: at once if it is generating a batch that will not be trained (the run ended first)."""
        if self.process.is_alive():
            self.jobs.put(None)
            self.process.join(timeout=2 * POLL_S)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=5)
        for q in (self.jobs, self.results):
            q.cancel_join_thread()
            q.close()


def _private_copy(policy: torch.nn.Module) -> torch.nn.Module:
    """A detached copy of the policy for the worker (the trainer's parameters, gradients and hooks stay
    here); pickling it for the spawned process moves its tensors to shared memory."""
    clone = copy.deepcopy(policy)
    for p in clone.parameters():
        p.grad = None
    return clone.eval()
