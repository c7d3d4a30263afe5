"""A reward whose scorer is down (think of a remote verifier): every call raises, so every sample is INFRA."""

from __future__ import annotations


class ScorerDown:
    def __init__(self, **settings) -> None:  # takes the replaced reward's settings
        self.settings = settings

    def __call__(self, completions: list[str], rows: list[dict]):
        raise ConnectionError("the scoring service is down")
