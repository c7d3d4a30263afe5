"""Bounded staleness (`rollout.max_staleness=k`): which policy version samples which step's batch, when a batch
may start, and how stale the trained samples were. Pure functions; the sampler process and the trainer's side
of the pipeline (rlx.rollout.async_sampler, rlx.rollout.async_collect) only call these.

Versions: version v is the policy after v optimiser-counted RL steps (version 0 the starting policy, version s
the weights at the start of RL step s). Step s trains on a batch sampled by version

    v(s) = max(0, s − k)

so the samples of step s are s − v(s) = min(s, k) versions behind the policy being updated. k = 0 is the
synchronous loop (v(s) = s: each batch sampled by the weights it trains).

Admission (when a batch may start generating): batch t is admitted as soon as version v(t) exists, i.e. at the
start of step v(t) = t − k, and never later: the trainer admits every batch up to s + k at the start of step s
(`admit_through`). This is AReaL's rule (Fu et al. 2025, arXiv 2505.24298, staleness-aware training: a rollout
starts only while its staleness cannot exceed η, `max_head_offpolicyness`) applied to whole batches, with the
bound checked at admission and nothing checked at arrival: an admitted batch is always trained, in full,
whatever its completions' lengths. Dropping samples that arrive too stale (the filter that tinker-cookbook
PR#822 found "systematically starves slow rollouts") cannot happen here: a batch's version is fixed when it is
admitted, and no completion of it is compared with a clock or a version again (tests/rollout/test_async.py
pins it with a long-completion group).

Departs from AReaL: AReaL generates with whatever version is newest when a request starts (staleness ≤ η, by
the clock); rlx uses exactly v(s) (staleness = min(s, k)), so a run is reproducible seed for seed and a killed
run resumes exactly (the in-flight batches are regenerated from their versions' weights and seeds).
"""

from __future__ import annotations

import torch
from torch import Tensor


def check_max_staleness(value) -> int:
    """The config value of rollout.max_staleness, checked: an int ≥ 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(
            f"rollout.max_staleness is how many policy versions a batch may lag the trainer, an int >= 0 "
            f"(got {value!r}): 0 is the synchronous loop, 1 overlaps generation with the update"
        )
    return value


def sampling_version(step: int, max_staleness: int) -> int:
    """v(s) = max(0, s − k): the policy version that samples step s's batch."""
    return max(0, step - max_staleness)


def admit_through(step: int, max_staleness: int) -> int:
    """At the start of step s, every batch t ≤ s + k is admitted: its version v(t) ≤ s exists (version s was
    made by step s − 1's update)."""
    return step + max_staleness


def admissions(step: int, max_staleness: int, admitted_through: int) -> list[int]:
    """The steps to admit at the start of step s, in order, given every batch ≤ `admitted_through` already was
    (−1: none yet). Each is admitted with version v(t), which must exist (v(t) ≤ s)."""
    due = list(range(admitted_through + 1, admit_through(step, max_staleness) + 1))
    assert all(sampling_version(t, max_staleness) <= step for t in due), "a batch admitted before its version"
    return due


def staleness(versions: Tensor | None, current: int) -> dict[str, Tensor]:
    """rollout/staleness_mean and rollout/staleness_max: how many versions each trained sample's sampler was
    behind the policy being updated, current − v_i.

    Args: versions [N] the policy version of each sample (int), None for the synchronous loop (every sample
    from the current weights: 0); current: the trainer's version (= the step). Returns: the two metrics
    (0 for an empty batch)."""
    if versions is None or versions.numel() == 0:
        return {"rollout/staleness_mean": torch.tensor(0.0), "rollout/staleness_max": torch.tensor(0.0)}
    behind = (current - versions).float()  # [N]
    return {"rollout/staleness_mean": behind.mean(), "rollout/staleness_max": behind.max()}
