"""Rewards that break on their own account (think of a remote verifier that is down)."""

from __future__ import annotations

from rlx.cli import status
from rlx.rewards.base import Reward
from rlx.rewards.math import MathReward


class ScorerDown(Reward):
    """Every call raises, so every sample is INFRA, held-out rows included."""

    def __init__(self, **settings) -> None:  # takes the replaced reward's settings
        self.settings = settings

    def __call__(self, completions: list[str], rows: list[dict]):
        raise ConnectionError("the scoring service is down")


class ScorerDownInTraining(MathReward):
    """reward=math, except that it raises in the RL loop's own scoring (the held-out evaluations score)."""

    def __call__(self, completions: list[str], rows: list[dict]):
        if status.phase() == "RL":
            raise ConnectionError("the scoring service is down")
        return super().__call__(completions, rows)


class BindFails(MathReward):
    """A reward with a bug: it raises a plain RuntimeError while the run is set up (a bug's traceback, not a
    message for the user)."""

    def bind(self, task) -> None:
        raise RuntimeError("this reward's bind has a bug")
