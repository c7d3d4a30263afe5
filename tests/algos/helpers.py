"""Pieces the algorithm tests share: the real `algo` node composed from conf/ (shrunk by overrides), a scripted
reward, and an optimiser stand-in that records the gradient it is asked to apply."""

from __future__ import annotations

import torch

from rlx.checks import build_node, check_algorithm
from rlx.rewards.base import Status, Verdict


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
        self.grads.append(torch.cat([p.grad.flatten() if p.grad is not None else torch.zeros_like(p).flatten()
                                     for p in self.params]))
