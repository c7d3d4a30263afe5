"""The reward interface: a callable over a batch of completions and their dataset rows.

Every completion gets a `Verdict`: the scalar reward, a status label saying why, and named components
(logged as `reward/<name>`). A reward never raises on bad model output: hostile or malformed text gets a
labelled zero. `INFRA` means the scorer itself broke; such a sample is excluded from its group's statistics
(and counted in `reward/infra_frac`), never silently scored as 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum

from rlx.errors import ConfigError


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


class Reward(ABC):
    """What every conf/reward/ choice is: the type `rlx.rollout.collect.score`, `rlx.score` and the start-up
    checks take. A reward is one subclass that implements `__call__` and one YAML (`_target_` to it); every other
    part has a default here, so the trainer calls each of them plainly and never asks whether it exists. A
    subclass overrides what it needs: as class attributes, or per instance in `__init__` from its YAML's keys.
    """

    #: dataset fields every row must carry for this reward (checked at start, with file and line)
    required_fields: tuple[str, ...] = ()
    #: a row whose `row_problem` is not None: "stop" the run at start (file:line and why), or "drop" the row
    invalid_rows: str = "stop"
    #: verdicts name the value a failure expected (set by rlx.score, the user's own evaluator, only: during
    #: training that value is the test's secret and never reaches samples.jsonl)
    show_expected: bool = False
    #: a math-style reward's answer strictness (True: the completion is the answer; False: extracted from it;
    #: None: no such notion, or not yet bound): the no-signal warning's hint reads it
    strict: bool | None = None
    #: how answers are compared ("exact" in process: the start-up report calls reward.timeout_s inert), or None
    verifier: str | None = None

    _sample_fields: tuple[str, ...] | None = None

    @property
    def sample_fields(self) -> tuple[str, ...]:
        """The row fields written beside a completion in samples.jsonl: `required_fields`, unless a subclass lists
        fewer (a reward whose fields hold expected values the policy must never see)."""
        return self.required_fields if self._sample_fields is None else self._sample_fields

    @sample_fields.setter
    def sample_fields(self, fields: tuple[str, ...]) -> None:
        self._sample_fields = tuple(fields)

    def bind(self, task) -> None:  # noqa: B027 - a default that does nothing, not a missing abstract method
        """Called once at start with the task this reward scores (rlx.train's preflight, rlx.score): a default
        that depends on the data (reward=math's strict=null) is resolved here."""

    def row_problem(self, row: dict) -> str | None:
        """What makes `row` unusable for this reward (None: nothing); rlx.checks.check_task asks of every row."""
        return None

    @abstractmethod
    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        """One Verdict per completion, in order: never raises on bad model output (a labelled zero instead)."""

    def close(self) -> None:  # noqa: B027 - a default that does nothing, not a missing abstract method
        """Release workers and sandboxes (called once when the run or rlx.score ends)."""


def as_reward(built: object, key: str = "reward") -> Reward:
    """`built` (what conf/reward's `_target_` made), checked to be a Reward; else one message with the fix."""
    if not isinstance(built, Reward):
        kind = type(built)
        raise ConfigError(
            f"{key}._target_ builds {kind.__module__}.{kind.__qualname__}, which is not an rlx reward: subclass "
            "rlx.rewards.base.Reward (implement __call__(completions, rows) -> list[Verdict]; docs/rewards.md, "
            "Write your own reward)"
        )
    return built
