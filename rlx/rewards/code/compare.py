"""How a value the candidate produced is compared with the one the test expects.

Only plain built-in data crosses from the candidate's process to the checker (rlx.rewards.code.plain), so
every comparison below runs on values whose `==` is Python's own: an object with an always-true `__eq__` never
reaches a comparison, it is refused as unencodable.

Semantics (`Comparison`):
- `python` (default for every format): Python's `==`, as the datasets' own harnesses compare: `3.0 == 3`,
  `1 == True`, `(1, 2) != [1, 2]`.
- `exact`: types must agree too, recursively (3.0 is not 3, True is not 1, a tuple is not a list).
- `rel_tol` / `abs_tol` (default 0): floats (and, under `python`, an int against a float) match within
  `math.isclose(got, expected, rel_tol, abs_tol)`, inside lists, tuples and dict values as well.
stdin/stdout outputs (`normalise_output`): `strip` (default: trailing whitespace of each line and trailing blank
lines ignored, the usual judge rule), `tokens` (any run of whitespace is one separator; floats within the
tolerances when both tokens parse as numbers), `lines` (LiveCodeBench's rule: the output stripped, each line
stripped, as many lines, each equal as text or as a row of decimals: "1.0" is "1", "1e3" is "1000"), `exact`
(byte for byte).
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass

MODES = ("python", "exact")
OUTPUT_MODES = ("strip", "tokens", "lines", "exact")


@dataclass(frozen=True)
class Comparison:
    mode: str = "python"
    rel_tol: float = 0.0
    abs_tol: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"reward.compare must be one of {MODES} (got {self.mode!r})")
        if self.rel_tol < 0 or self.abs_tol < 0:
            raise ValueError(f"reward.rel_tol and reward.abs_tol must be >= 0 (got {self.rel_tol}, {self.abs_tol})")

    def equal(self, got, expected) -> bool:
        """Whether `got` (plain data from the candidate) matches `expected` under these semantics."""
        if self.mode == "exact" and type(got) is not type(expected):
            return False
        if self._tolerant(got, expected):
            return math.isclose(got, expected, rel_tol=self.rel_tol, abs_tol=self.abs_tol) or got == expected
        if type(got) in (list, tuple) and type(expected) in (list, tuple):
            return (
                type(got) is type(expected)  # Python's == too: (1, 2) != [1, 2]
                and len(got) == len(expected)
                and all(self.equal(g, e) for g, e in zip(got, expected, strict=True))
            )
        if type(got) is dict and type(expected) is dict:
            return got.keys() == expected.keys() and all(self.equal(got[k], expected[k]) for k in expected)
        return bool(got == expected)

    def _tolerant(self, got, expected) -> bool:
        if not (self.rel_tol or self.abs_tol):
            return False
        numbers = (int, float) if self.mode == "python" else (float,)
        return (
            type(got) in numbers
            and type(expected) in numbers
            and float in (type(got), type(expected))
            and not (math.isnan(got) or math.isnan(expected))
        )


def normalise_output(text: str, mode: str) -> str:
    if mode == "exact":
        return text
    if mode == "tokens":
        return " ".join(text.split())
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def outputs_match(got: str, expected: str, mode: str, comparison: Comparison) -> bool:
    """stdin/stdout: the program's output against the expected one, after `mode`'s normalisation."""
    if mode == "lines":
        return _lines_match(got, expected)
    if normalise_output(got, mode) == normalise_output(expected, mode):
        return True
    if mode != "tokens" or not (comparison.rel_tol or comparison.abs_tol):
        return False
    a, b = got.split(), expected.split()
    return len(a) == len(b) and all(x == y or _close(x, y, comparison) for x, y in zip(a, b, strict=True))


def _close(a: str, b: str, comparison: Comparison) -> bool:
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=comparison.rel_tol, abs_tol=comparison.abs_tol)


def _lines_match(got: str, expected: str) -> bool:
    mine = [line.strip() for line in got.strip().split("\n")]
    theirs = [line.strip() for line in expected.strip().split("\n")]
    return len(mine) == len(theirs) and all(a == b or _same_decimals(a, b) for a, b in zip(mine, theirs, strict=True))


def _same_decimals(a: str, b: str) -> bool:
    """Two lines as rows of decimals, equal token by token (a NaN equals nothing, a signalling one included)."""
    try:
        return [decimal.Decimal(token) for token in a.split()] == [decimal.Decimal(token) for token in b.split()]
    except decimal.InvalidOperation:
        return False
