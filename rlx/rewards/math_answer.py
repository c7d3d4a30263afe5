"""Final answers as values: how reward=math decides that two answers are the same (docs/rewards.md lists the
accepted formats).

An answer is normalised (`normalise`), then read (`read`) as one of:
- `Number`: an exact rational (`fractions.Fraction`, never a float): integers of any size, decimals, `a/b`,
  `\\frac{a}{b}` (and `\\dfrac`, `\\tfrac`, `\\frac12`), `+ - * / ^` (integer powers) and parentheses over them;
  `decimals` records the precision the answer states when it is one decimal literal ("0.33": 2);
- `Items`: a comma list. A bare one ("2, 3") is a set of solutions (MATH's "enter all the solutions, separated
  by commas"): order-free; a bracketed one ("(1, 2)", "[0, 1)") is ordered and its brackets count;
- `Text`: anything else, compared without its spaces.

Rules (each pinned by tests/rewards/test_math*.py):
- Numbers compare exactly: 2^64 - 1 is not 2^64, 7.0 is 7, 1/2 is 0.5.
- Rounding only to the reference's stated precision: when the reference is a decimal with d >= 1 digits after
  the point and the prediction is more precise (more digits, or a fraction), the prediction must round to the
  reference at d digits (|p - r| <= 0.5 * 10^-d): 1/3 matches 0.33. A prediction no more precise than the
  reference must equal it, and an integer reference is matched only exactly (math_verify's default rounds both
  sides to 6 digits, so 0.1234567 matched 0.1234568).
- Commas: a comma between digits followed by exactly three digits and no further digit group of another size
  ("1,000", "12,345,678.5") is a thousands separator; MATH's `1{,}000` too. Every other comma separates items,
  so "1,2,3" is the list {1, 2, 3}, never 123. Write a list of numbers with a space after each comma
  ("1, 234") where a thousands reading would be possible.
- Units and decorations are dropped: `$...$`, `\\(...\\)`, `\\boxed{}`, `\\text{...}` units after a number
  ("49\\text{ cm}^2"), unit words after a number ("49 cm^2", "12 square units", "5 dollars"; a one-letter
  unit only after a space: "5 m", while "5m" stays 5 times m), `\\$`, `%`, degrees (`^\\circ`, `°`), a
  leading "x =", a trailing period, `\\left`/`\\right` and LaTeX spacing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 2000  # longer answers are compared as text (no parsing cost grows with a hostile answer's size)
MAX_BITS = 100_000  # a power whose result would be larger than this is not evaluated (2^{10^9} is text)
UNIT_WORDS = (
    "square units|square unit|sq units|units|unit|cubic units|centimeters|centimetres|centimeter|centimetre|"
    "millimeters|millimeter|kilometers|kilometer|meters|metres|meter|metre|inches|inch|feet|foot|ft|yards|yard|"
    "miles|mile|mph|km/h|m/s|cm|mm|km|kg|mg|grams|gram|pounds|pound|lbs|lb|ounces|ounce|oz|liters|litres|liter|"
    "litre|ml|seconds|second|secs|sec|minutes|minute|mins|min|hours|hour|hrs|hr|days|day|weeks|week|months|month|"
    "years|year|degrees|degree|dollars|dollar|cents|cent|percent"
)
UNIT_TAIL = re.compile(
    rf"(?<=[\d}}).)])\s*(?:(?:square|sq\.?|cubic)\s+)?(?:{UNIT_WORDS})(?:\^\{{?[23]\}}?|[²³])?\.?\s*$", re.IGNORECASE
)
SHORT_UNIT = re.compile(r"(?<=\d)\s+(?:m|g|s|h|l|L)(?:\^\{?[23]\}?|[²³])?\s*$")  # "5 m", never "5m" (5 times m)
THOUSANDS = re.compile(r"(?<![\d,.])(-?\d{1,3}(?:,\d{3})+)(\.\d+)?(?![\d])(?!,\d)")
SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~")
DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
TOKEN = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+|\\frac|\\cdot|\\times|\\div|[-+*/^(){}])")
BRACKETS = {"(": (")", "]"), "[": (")", "]"), "\\{": ("\\}",)}


@dataclass(frozen=True)
class Number:
    value: Fraction
    decimals: int | None = None  # digits after the point when the answer is one decimal literal


@dataclass(frozen=True)
class Items:
    brackets: str  # "" for a bare list (a set of solutions), else the opening and closing bracket
    items: tuple


@dataclass(frozen=True)
class Text:
    text: str


def braced(text: str, start: int) -> tuple[str, int] | None:
    """The contents of the {...} group opening at text[start], and the index after it (nested braces kept)."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index], index + 1
    return None


def _unwrap(text: str, commands: tuple[str, ...], keep: bool = True) -> str:
    """Every `\\cmd{x}` of `commands` replaced by x (or removed when not `keep`)."""
    for command in commands:
        while (start := text.find(command + "{")) != -1:
            group = braced(text, start + len(command))
            if group is None:
                break
            text = text[:start] + (group[0] if keep else "") + text[group[1] :]
    return text


def _strip_delimiters(text: str) -> str:
    changed = True
    while changed:
        changed = False
        text = text.strip()
        if text.startswith("\\boxed{") and (group := braced(text, 6)) and group[1] == len(text):
            text, changed = group[0], True
        for left, right in DELIMITERS:
            if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
                text, changed = text[len(left) : -len(right)], True
                break
        if text.endswith(".") and not text.endswith(".."):
            text, changed = text[:-1], True
    return text


def normalise(answer: str) -> str:
    """The answer without its decorations (module docstring); thousands separators removed."""
    text = _strip_delimiters(answer.replace("−", "-").replace("{,}", ",").replace("**", ""))
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    text = re.sub(r"\\left\b|\\right\b|\\displaystyle\b", "", text)
    text = SPACING.sub(" ", text)
    text = re.sub(r"\^\s*\{?\\circ\}?|°|\\degree\b", "", text)
    # a \text{...} (or \mbox, \mathrm) unit after a number: "49\text{ cm}^2", "5\mbox{ dollars}"
    text = re.sub(r"(?<=[\d}])\s*\\(?:text|mbox|mathrm)\{[^{}]*\}(?:\^\{?[23]\}?)?\s*$", "", text)
    text = _unwrap(text, ("\\text", "\\textbf", "\\mbox", "\\mathrm", "\\mathbf"))
    text = text.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    text = re.sub(r"^[A-Za-z]\s*=\s*(?=\S)", "", text.strip())  # "x = 5"
    text = SHORT_UNIT.sub("", UNIT_TAIL.sub("", text)).strip()
    text = THOUSANDS.sub(lambda m: m.group(1).replace(",", "") + (m.group(2) or ""), text)
    return " ".join(text.split()).rstrip(".").strip()


class _Rational:
    """A recursive-descent reader of exact rational expressions over TOKEN's tokens."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, *expected: str) -> str:
        token = self.peek()
        if token is None or (expected and token not in expected):
            raise ValueError(f"expected {expected}, got {token!r}")
        self.at += 1
        return token

    def expr(self) -> Fraction:
        value = self.term()
        while self.peek() in ("+", "-"):
            value = value + self.term() if self.take() == "+" else value - self.term()
        return value

    def term(self) -> Fraction:
        value = self.unary()
        while self.peek() in ("*", "/", "\\cdot", "\\times", "\\div"):
            operator, right = self.take(), self.unary()
            value = value * right if operator in ("*", "\\cdot", "\\times") else value / right
        return value

    def unary(self) -> Fraction:
        if self.peek() in ("-", "+"):
            return -self.unary() if self.take() == "-" else self.unary()
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.unary() if self.peek() in ("-", "+") else self.atom()
        if (
            exponent.denominator != 1
            or abs(exponent) * max(abs(base.numerator), abs(base.denominator), 1).bit_length() > MAX_BITS
        ):
            raise ValueError("not an exact rational power within the size limit")
        return base ** int(exponent)

    def atom(self) -> Fraction:
        token = self.take()
        if token in ("(", "{"):
            value = self.expr()
            self.take(")" if token == "(" else "}")
            return value
        if token == "\\frac":
            return self.group() / self.group()
        if token[0].isdigit() or token[0] == ".":
            return Fraction(token)
        raise ValueError(f"unexpected {token!r}")

    def group(self) -> Fraction:
        """A \\frac argument: {expr}, or one digit of a run (`\\frac12` is 1/2)."""
        if self.peek() == "{":
            return self.atom()
        token = self.take()
        if not token.isdigit():
            raise ValueError("\\frac needs {...} or digits")
        if len(token) > 1:  # \frac12: the first digit now, the rest is the next argument
            self.tokens[self.at - 1 : self.at] = [token[0], token[1:]]
            self.at -= 1
            return Fraction(self.take())
        return Fraction(token)


def number(text: str) -> Number | None:
    """`text` as an exact rational expression, or None."""
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            return None if text[position:].strip() else _finish(tokens, text)
        tokens.append(match.group(1))
        position = match.end()
    return _finish(tokens, text)


def _finish(tokens: list[str], text: str) -> Number | None:
    if not tokens:
        return None
    reader = _Rational(list(tokens))
    try:
        value = reader.expr()
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    if reader.peek() is not None:
        return None
    literal = re.fullmatch(r"\s*[-+]?\s*(\d*)\.(\d+)\s*", text)
    return Number(value, len(literal.group(2)) if literal else None)


def _split(text: str) -> list[str]:
    """`text` cut at its top-level commas (not inside (), [], {})."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


def read(answer: str) -> Number | Items | Text:
    """What the answer says, after `normalise` (module docstring)."""
    text = normalise(answer) if len(answer) <= MAX_CHARS else answer.strip()
    if len(text) > MAX_CHARS:
        return Text(text)
    for left, closers in BRACKETS.items():
        for right in closers:
            if text.startswith(left) and text.endswith(right) and len(text) > len(left) + len(right):
                parts = _split(text[len(left) : -len(right)])
                if len(parts) > 1 and all(p.strip() for p in parts):
                    return Items("{}" if left == "\\{" else left + right, tuple(read(p) for p in parts))
    parts = _split(text)
    if len(parts) > 1 and all(p.strip() for p in parts):
        return Items("", tuple(read(p) for p in parts))
    value = number(text)
    return value if value is not None else Text(text.replace(" ", ""))


def _numbers_equal(predicted: Number, reference: Number) -> bool:
    if predicted.value == reference.value:
        return True
    digits = reference.decimals
    if not digits or (predicted.decimals is not None and predicted.decimals <= digits):
        return False  # an exact reference, or a prediction no more precise than it: equal or wrong
    return abs(predicted.value - reference.value) * 2 * 10**digits <= 1


def decide(predicted: str, reference: str) -> bool | None:
    """Whether the answers are the same; None when text is involved and differs (a symbolic verifier may know)."""
    return _same(read(predicted), read(reference))


def _same(p: Number | Items | Text, r: Number | Items | Text) -> bool | None:
    if isinstance(p, Text) or isinstance(r, Text):
        return True if p == r else None
    if isinstance(p, Number) and isinstance(r, Number):
        return _numbers_equal(p, r)
    if not (isinstance(p, Items) and isinstance(r, Items)):
        return False
    if p.brackets != r.brackets or len(p.items) != len(r.items):
        return False
    if p.brackets not in ("", "{}"):
        return all(_same(a, b) for a, b in zip(p.items, r.items, strict=True))
    unmatched = list(r.items)  # a set of solutions: each predicted item matches a different reference item
    for item in p.items:
        match = next((i for i, ref in enumerate(unmatched) if _same(item, ref)), None)
        if match is None:
            return False
        unmatched.pop(match)
    return True


def stated_decimals(reference: str) -> int | None:
    """The decimal places the reference states (for math_verify's rounding), None when it states none."""
    value = read(reference)
    return value.decimals if isinstance(value, Number) else None
