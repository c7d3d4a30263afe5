"""Final answers as values: how reward=math decides that two answers are the same (docs/rewards.md lists the
accepted formats).

An answer is normalised (`normalise`), then read (`read`) as one of:
- `Number`: an exact rational (`fractions.Fraction`, never a float): integers of any size, decimals, `a/b`,
  `\\frac{a}{b}` (and `\\dfrac`, `\\tfrac`, `\\frac12`), `1.5e3`, `1.5 \\times 10^{3}`, mixed numbers
  (`2\\frac{1}{4}`, `1 1/2`), repeating decimals (`0.\\overline{3}`, `0.1666...`), `+ - * / ^` (integer
  powers) and parentheses over them; `decimals` records the precision the answer states when it is one
  decimal literal ("0.33": 2);
- `Real`: an exact irrational value, Σ q·√n·π^k (rlx.rewards.math_value): `\\frac{\\sqrt{2}}{2}` is `\\sqrt2/2`,
  `\\sqrt{8}` is `2\\sqrt{2}`, `\\frac{\\pi}{2}` is `\\frac12\\pi`;
- `Items`: a list. A bare one ("2, 3", "x = 2 or x = 3") or a set ("\\{2, 3\\}") is a set of solutions
  (MATH's "enter all the solutions, separated by commas"): order-free; a bracketed one ("(1, 2)", "[0, 1)") is
  ordered and its brackets count;
- `Items` of rows, a matrix or vector: `\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}` (MATH's vectors and matrices;
  `bmatrix`, `Bmatrix`, `matrix` and `smallmatrix` are the same matrix, `vmatrix` a determinant, not), read entry
  by entry, shape and order counting;
- `Text`: anything else, compared without its spaces.

Rules (each pinned by tests/rewards/test_math*.py):
- Numbers compare exactly: 2^64 - 1 is not 2^64, 7.0 is 7, 1/2 is 0.5.
- Rounding only to the reference's stated precision: when the reference is a decimal with d >= 1 digits after
  the point and the prediction is more precise (more digits, a fraction, a root), the prediction must round to
  the reference at d digits (half away from zero): 1/3 matches 0.33. A prediction no more precise than the
  reference must equal it, and an integer or exact reference is matched only exactly (math_verify's default
  rounds both sides to 6 digits, so 0.1234567 matched 0.1234568).
- Commas: a comma between digits followed by exactly three digits and no further digit group of another size
  ("1,000", "12,345,678.5") is a thousands separator; MATH's `1{,}000` and `10,\\!000` too, and thin spaces
  ("1\\,000\\,000"). Every other comma separates items, so "1,2,3" is the list {1, 2, 3}, never 123. Write a list
  of numbers with a space after each comma ("1, 234") where a thousands reading would be possible.
- Units and decorations are dropped: `$...$`, `\\(...\\)`, `\\boxed{}`, `\\text{...}` units after a number
  ("49\\text{ cm}^2"), unit words after a number ("49 cm^2", "12 square units", "5 dollars"; a one-letter
  unit only after a space: "5 m", while "5m" stays 5 times m), `\\$`, degrees (`^\\circ`, `°`), a leading
  "x =" or "x \\in", a trailing period, `\\left`/`\\right`, LaTeX spacing, and what renders as nothing or
  struck out (`\\phantom{8}7` is 7, and so is `7\\cancel{8}`). When both answers state a unit they must state
  the same one (7 hours is not 7 minutes). A percent is its number or its hundredth: `25\\%` matches 25 and 0.25.
- A stated relation other than equality (`\\neq 7`, `x > 7`, "not 7", `\\approx 7`, `\\sim 7`, "~7") or a question
  mark never matches an answer without the same relation.
- Spellings outside LaTeX read as their LaTeX: superscripts are exponents ("10⁸" is 10^{8}, "7²" is 49),
  typographic minus signs are minus signs ("–7" is -7), vulgar fractions are fractions ("3½" is 3\\frac{1}{2}),
  `±`/`∓`/`\\mp` are `\\pm` (two values), `\\lor`/`\\vee` are "or" (two answers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from rlx.rewards.math_text import decorated, normalise, units
from rlx.rewards.math_value import MAX_NESTING, Reader, TooLarge, Value, rounds_to

MAX_CHARS = 2000  # longer answers are compared as text (no parsing cost grows with a hostile answer's size)
NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
TOKEN = re.compile(rf"\s*({NUMBER}|\\frac|\\sqrt|\\pi|\\cdot|\\times|\\div|[-+*/^(){{}}])")
BRACKETS = {"(": (")", "]"), "[": (")", "]"), "\\{": ("\\}",)}
RELATION = re.compile(  # a command ends where its letters do: "\neq7" is \neq before 7
    r"\\(?:n?[lg]eq?q?|[lg]eqslant|[lg]t|l?neg|not|neq?|n?less|ngtr|[lg]n?eqq?|lesssim|gtrsim|lessapprox|gtrapprox|ll|gg"
    r"|prec|succ|preceq|succeq|approx|approxeq|thickapprox|doteq|sim|simeq|thicksim|backsim|eqsim|cong|propto|mid|nmid)"
    r"(?![A-Za-z])|!=|[<>≠≤≥¬≈≐∼≃≅≲≳⪅⪆≪≫≦≧⩽⩾≺≻⪯⪰∝]|\bnot\b|\?"
    r"|\^\s*(?:[+-]|\{\s*[+-]\s*\})(?![\d.])"  # 7^+, 7^{-}: a one-sided limit, not the number (2^{-1} is 1/2)
    r"|(?:[+-]|\\pm|\\mp)\s*\}?\s*$"  # 7+, 7\pm: a dangling operator ("7 or more")
    r"|(?<=\d)\s*\|\s*(?=[-+]?\d)",  # 7|8: divides (or a hedge), never 7
    re.IGNORECASE,
)
MIXED = re.compile(r"(-?)(\d+)\s*\\frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))|(-?)(\d+)\s+(\d+)/(\d+)")
OVERLINE = re.compile(r"(-?)(\d*)\.(\d*)\\overline\{(\d{1,100})\}")
ELLIPSIS = re.compile(r"(-?)(\d*)\.(\d+)\s*\\ldots")
MAX_CYCLE = 100  # digits of a repeating block
PLAIN_INTEGER = re.compile(r"-?[0-9]{1,100}", re.ASCII)  # ASCII digits only: int() also reads "٣" and "1_0"
# a matrix environment (its body holds no other environment); `\\` ends a row, `&` a column
MATRIX = re.compile(r"\\begin\{([pbB]?matrix|smallmatrix)\}((?:(?!\\begin\{|\\end\{).)*)\\end\{\1\}", re.S)
ROW_BREAK = re.compile(r"\\\\(?:\[[^\]]*\])?")  # "\\" and "\\[2pt]"
BASED = re.compile(r"([0-9A-Za-z]+)(?:_\{?(\d{1,2})\}?)?")  # digits, then a base subscript: 1011_2, A3F_{16}
WORDS = re.compile(r" (?:or|and) ")  # "x = 2 or x = 3": two solutions (after normalise, spaces are single)


@dataclass(frozen=True)
class Number:
    value: Fraction
    decimals: int | None = None  # digits after the point when the answer is one decimal literal


@dataclass(frozen=True)
class Real:
    """An exact irrational value (rlx.rewards.math_value.Value), compared by its terms."""

    key: frozenset
    value: Value = field(compare=False)


@dataclass(frozen=True)
class Items:
    brackets: str  # "" for a bare list or a set (a set of solutions), else the opening and closing bracket
    items: tuple


@dataclass(frozen=True)
class Text:
    text: str
    huge: bool = False  # a number over the size limits (2^{10^9}): equal only to the same text, never verified


def number(text: str) -> Number | Real | Text | None:
    """`text` as an exact value (rational or real), or None."""
    special = _mixed(text) if ("\\frac" in text or "/" in text) else None
    special = special if special is not None else _repeating(text)
    if special is not None:
        return Number(special)
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            if text[position:].strip():
                return None
            break
        tokens.append(match.group(1))
        position = match.end()
    if not tokens:
        return None
    try:
        value = Reader(tokens).whole()
    except TooLarge:
        return Text(text.replace(" ", ""), huge=True)
    except (ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
        return None
    rational = value.rational()
    if rational is None:
        return Real(value.key(), value)
    literal = re.fullmatch(r"\s*[-+]?\s*(\d*)\.(\d+)\s*", text)
    return Number(rational, len(literal.group(2)) if literal else None)


def _mixed(text: str) -> Fraction | None:
    """A mixed number: 2\\frac{1}{4} or "1 1/2" (a whole and a proper fraction), else None."""
    found = MIXED.fullmatch(text.strip())
    if found is None:
        return None
    groups = found.groups()
    sign, whole, top, bottom = (
        (groups[0], groups[1], groups[2] or groups[3], groups[4] or groups[5])
        if groups[1] is not None
        else (groups[6], groups[7], groups[8], groups[9])
    )
    if not 0 < int(top) < int(bottom):
        return None
    value = int(whole) + Fraction(int(top), int(bottom))
    return -value if sign else value


def _repeating(text: str) -> Fraction | None:
    """0.\\overline{3}, 0.1\\overline{6}, or a decimal whose last digits repeat before an ellipsis (0.1666...,
    0.142857142857...): the shortest block seen at least twice at the end repeats."""
    text = text.strip()
    if (found := OVERLINE.fullmatch(text)) is not None:
        sign, whole, fixed, cycle = found.groups()
    elif (found := ELLIPSIS.fullmatch(text)) is not None:
        sign, whole, digits = found.groups()
        size = next(
            (n for n in range(1, min(MAX_CYCLE, len(digits) // 2) + 1) if digits.endswith(digits[-n:] * 2)), None
        )
        if size is None:
            return None
        fixed, cycle = digits[: -2 * size], digits[-size:]
    else:
        return None
    value = Fraction(int(whole or "0")) + (Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0)
    value += Fraction(int(cycle), (10 ** len(cycle) - 1) * 10 ** len(fixed))
    return -value if sign else value


def _split(text: str) -> list[str]:
    """`text` cut at its top-level commas and " or " / " and " (not inside (), [], {})."""
    parts, depth, start, index = [], 0, 0, 0
    while index < len(text):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char == ",":
            parts.append(text[start:index])
            start = index + 1
        elif depth == 0 and (word := WORDS.match(text, index)) is not None:
            parts.append(text[start:index])
            start = index = word.end()
            continue
        index += 1
    return [*parts, text[start:]]


def _plus_minus(text: str) -> str:
    """`a \\pm b` as the list of its two values ("a + b, a - b"); `\\pm 2` is "2, -2"."""
    head, sign, tail = text.partition("\\pm")
    if not sign or "\\pm" in tail or "," in text or not tail.strip():
        return text
    return f"{head} + {tail}, {head} - {tail}" if head.strip() else f"{tail}, -{tail}"


def read(answer: str, depth: int = 0) -> Number | Real | Items | Text:
    """What the answer says, after `normalise` (module docstring)."""
    text = normalise(answer) if len(answer) <= MAX_CHARS else answer.strip()
    if len(text) > MAX_CHARS or depth > MAX_NESTING:
        return Text(text.replace(" ", ""))
    matrix = MATRIX.fullmatch(text)
    if matrix is not None:
        rows = ROW_BREAK.split(matrix.group(2))
        rows = rows[:-1] if len(rows) > 1 and not rows[-1].strip() else rows  # a trailing \\ ends no row
        cells = [row.split("&") for row in rows]
        if all(c.strip() for row in cells for c in row):
            return Items("matrix", tuple(Items("row", tuple(read(c, depth + 1) for c in row)) for row in cells))
    for left, closers in BRACKETS.items():
        for right in closers:
            if text.startswith(left) and text.endswith(right) and len(text) > len(left) + len(right):
                parts = _split(text[len(left) : -len(right)])
                if len(parts) > 1 and all(p.strip() for p in parts):
                    return Items("" if left == "\\{" else left + right, tuple(read(p, depth + 1) for p in parts))
    parts = _split(_plus_minus(text))
    if len(parts) > 1 and all(p.strip() for p in parts):
        return Items("", tuple(read(p, depth + 1) for p in parts))
    value = number(text)
    return value if value is not None else Text(text.replace(" ", ""))


def _numbers_equal(predicted: Number, reference: Number) -> bool:
    if predicted.value == reference.value:
        return True
    digits = reference.decimals
    if not digits or (predicted.decimals is not None and predicted.decimals <= digits):
        return False  # an exact reference, or a prediction no more precise than it: equal or wrong
    return rounds_to(Value.of(predicted.value), reference.value, digits)


def decide(predicted: str, reference: str) -> bool | None:
    """Whether the answers are the same; None when text is involved and differs (a symbolic verifier may know).
    An answer longer than MAX_CHARS is only ever equal to the same text (no reading cost grows with its size)."""
    if len(predicted) > MAX_CHARS or len(reference) > MAX_CHARS:
        return predicted.strip() == reference.strip()
    if PLAIN_INTEGER.fullmatch(predicted) and PLAIN_INTEGER.fullmatch(reference):
        return int(predicted) == int(reference)  # (perf) what the reading below gives two bare integers, ~100x sooner
    if sorted(RELATION.findall(decorated(predicted))) != sorted(RELATION.findall(decorated(reference))):
        return False  # "\neq 7", "x > 7", "not 7", "7?" against 7
    based = _numerals(normalise(predicted), normalise(reference))
    if based is not None:
        return based
    (unit_p, percent_p), (unit_r, percent_r) = units(predicted), units(reference)
    if unit_p is not None and unit_r is not None and unit_p != unit_r and "%" not in (unit_p, unit_r):
        return False  # 7 hours is not 7 minutes
    p, r = read(predicted), read(reference)
    same = _same(p, r)
    if same is not True and percent_p != percent_r:  # 25% is 25 and 0.25
        hundredth = lambda v: Number(v.value / 100) if isinstance(v, Number) else v  # noqa: E731
        again = _same(hundredth(p), r) if percent_p else _same(p, hundredth(r))
        same = True if again is True else same
    return same


def _numerals(predicted: str, reference: str) -> bool | None:
    """Numerals in a stated base (MATH's `1011_2`, `A3F_{16}`): the same digits, and the same base where both
    state one (the question names the base, so `1011` answers `1011_2`); None where neither states a base.
    Never a value: `11` is not `1011_2` (the question asked for base 2), and `1011_3` is not `1011_2`."""
    p, r = BASED.fullmatch(predicted), BASED.fullmatch(reference)
    if not ((p and p.group(2)) or (r and r.group(2))):
        return None
    if p is None or r is None:
        return False
    bases = {b for b in (p.group(2), r.group(2)) if b}
    return p.group(1).upper() == r.group(1).upper() and len({int(b) for b in bases}) == 1


def _same(p, r) -> bool | None:
    if isinstance(p, Text) or isinstance(r, Text):
        if isinstance(p, Text) and isinstance(r, Text) and p.text == r.text:
            return True
        return False if getattr(p, "huge", False) or getattr(r, "huge", False) else None
    if isinstance(p, Number) and isinstance(r, Number):
        return _numbers_equal(p, r)
    if isinstance(p, Real) and isinstance(r, Real):
        return p == r
    if isinstance(p, Real) and isinstance(r, Number):  # a root or pi against a decimal it may round to
        return bool(r.decimals) and rounds_to(p.value, r.value, r.decimals or 0)
    if not (isinstance(p, Items) and isinstance(r, Items)):
        return False
    if p.brackets != r.brackets or len(p.items) != len(r.items):
        return False
    if p.brackets:
        return all(_same(a, b) is True for a, b in zip(p.items, r.items, strict=True))
    unmatched = list(r.items)  # a set of solutions: each predicted item matches a different reference item
    for item in p.items:
        match = next((i for i, ref in enumerate(unmatched) if _same(item, ref) is True), None)
        if match is None:
            return False
        unmatched.pop(match)
    return True


MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp sqrt max min gcd lcm mod det "
    "deg infty inf pi".split()
)


def wordy(answer: str) -> bool:
    """Whether the answer holds words besides mathematics ("7 is wrong", "\\text{the answer is 7}"): a symbolic
    verifier would pick a number out of them, so such an answer is equal only as rlx reads it."""
    if len(answer) > MAX_CHARS:
        return True
    text = re.sub(r"\\[A-Za-z]+", " ", normalise(answer))
    return any(word.lower() not in MATH_WORDS for word in re.findall(r"[A-Za-z]{2,}", text))


def stated_decimals(reference: str) -> int | None:
    """The decimal places the reference states (for math_verify's rounding), None when it states none."""
    value = read(reference)
    return value.decimals if isinstance(value, Number) else None
