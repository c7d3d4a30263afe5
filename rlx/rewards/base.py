"""The reward interface: a callable over a batch of completions and their dataset rows.

Every completion gets a `Verdict`: the scalar reward, a status label saying why, and named components
(logged as `reward/<name>`). A reward never raises on bad model output: hostile or malformed text gets a
labelled zero. `INFRA` means the scorer itself broke; such a sample is excluded from its group's statistics
(and counted in `reward/infra_frac`), never silently scored as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


class Status(str, Enum):
    PASS = "PASS"  # fully correct
    FAIL = "FAIL"  # well-formed but wrong
    FORMAT = "FORMAT"  # no answer could be extracted / does not parse
    TIMEOUT = "TIMEOUT"
    CRASH = "CRASH"
    OOM = "OOM"
    VIOLATION = "VIOLATION"  # tried to cheat or broke a sandbox rule
    INFRA = "INFRA"  # the scorer broke, not the completion: excluded from statistics


@dataclass
class Verdict:
    reward: float
    status: Status
    components: dict[str, float] = field(default_factory=dict)
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "reward": self.reward,
            "status": self.status.value,
            "components": self.components,
            "details": self.details,
        }


class Reward(Protocol):
    """What every conf/reward/ choice is: the type `rlx.rollout.collect.score` and `rlx.score` take."""

    #: dataset fields every row must carry for this reward (checked at start, with file and line)
    required_fields: tuple[str, ...]

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]: ...
