"""A row's tests as the checker runs them (rlx.rewards.code.formats and .published build them from rows)."""

from __future__ import annotations

from dataclasses import dataclass, field


class RowError(ValueError):
    """A row whose tests cannot be parsed: a dataset error, reported with the file and line at start."""


@dataclass
class Tests:
    """A row's tests, ready for the sandbox. program: setup run in the checker, then `steps` one at a time."""

    format: str
    labels: list[str]  # one per test: the assert's source, or "case i"
    setup: str = ""
    steps: list[str] = field(default_factory=list)
    proxies: list[str] = field(default_factory=list)  # names the test reads that are the candidate's globals
    classes: list[str] = field(default_factory=list)  # classes the setup defines: their objects cross as values
    preamble: str = ""  # the prompt's helpers, run before the candidate's code (completion / fenced)
    code_from: str = "completion"
    inputs: list[str] = field(default_factory=list)  # stdio
    outputs: list[str] = field(default_factory=list)  # stdio: kept outside the sandbox
    output: str | None = None  # stdio: how outputs compare where the dataset's harness fixes it, else the reward's
