"""Seeding: the RL phase's randomness is a function of (seed, step) and of nothing that ran before.

Every RL step starts by reseeding Python's, numpy's and torch's global generators (CPU and every CUDA
device) from `step_seed(seed, step)`, before it samples prompts or completions. So:
  - a run whose warm start was trained in this process draws exactly what a run that loaded it from the
    cache draws, and job k of a multirun draws what the same job run alone draws: whatever the warm start,
    the validation or an earlier job consumed is gone at the first step;
  - a resumed run draws exactly what the uninterrupted run drew from its first step on, with no generator
    state to capture at the right instant (Lightning builds data-loader iterators, which draw from torch's
    generator, at different moments in a fresh and in a resumed fit).
The samplers of the `curriculum` group keep their own `random.Random(seed)`, saved in every checkpoint.
Work that must not disturb the caller's generators at all (the warm start) runs inside `isolated_rng()`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


def step_seed(seed: int, step: int) -> int:
    """A 63-bit seed for RL step `step` of a run seeded `seed`: numpy's SeedSequence mixes the pair, so
    neighbouring steps and neighbouring run seeds give unrelated streams (seed + step would not:
    seed 0 step 1 would equal seed 1 step 0)."""
    return _mixed(seed % 2**64, step)


def eval_seed(seed: int, step: int, rank: int, batch: int) -> int:
    """The seed of the sampled held-out completions (`val_samples`) of validation batch `batch` on rank `rank`
    after RL step `step`: a stream of its own (the trailing 1), so an evaluation never draws what a training
    step draws, and the same in a resumed run as in the uninterrupted one."""
    return _mixed(seed % 2**64, step, rank, batch, 1)


def _mixed(*entropy: int) -> int:
    state = np.random.SeedSequence(list(entropy)).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 31 | int(state[1]) >> 1) & (2**63 - 1)


def seed_step(seed: int, step: int) -> None:
    """Seed Python's, numpy's and torch's global generators (all devices) for RL step `step`."""
    value = step_seed(seed, step)
    random.seed(value)
    np.random.seed(value % 2**32)
    torch.manual_seed(value)  # also seeds every CUDA device


@contextmanager
def isolated_rng() -> Iterator[None]:
    """Run a block with its own generator states: Python's, numpy's and torch's (CPU and every CUDA device)
    are restored on exit, so the block leaves no trace in the caller's random streams."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
