"""Exact values of final answers (rlx.rewards.math_answer reads answers into them): sums of rational multiples of
square roots and powers of pi, Σ q·√n·π^k with n square-free, so that `\\frac{\\sqrt{2}}{2}`, `\\sqrt2/2`,
`\\frac{1}{\\sqrt{2}}` and `0.5\\sqrt{2}` are one value, `\\sqrt{8}` is `2\\sqrt{2}`, and `\\frac{\\pi}{2}` is
`\\frac{1}{2}\\pi` — compared exactly, never as floats (2^64 - 1 is not 2^64).

`parse(tokens)` reads `+ - * / ^`, `\\cdot \\times \\div`, parentheses and braces, `\\frac{a}{b}` (`\\frac12`),
`\\sqrt{x}` of a rational, `\\pi`, implicit products before `\\sqrt`, `\\pi` or `(` (`3\\sqrt{2}`, `2\\pi`,
`2(x+1)`), numbers with a decimal exponent (`1.5e3`). Division only by one term (`\\frac{1}{\\sqrt{2}}`;
`\\frac{1}{1+\\sqrt{2}}` is not read). Sizes are bounded (`MAX_BITS`, `MAX_TERMS`, `MAX_RADICAND`): a larger
answer is not evaluated (ValueError), so `2^{10^9}` costs nothing.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

MAX_BITS = 100_000  # a power whose result would be larger than this is not evaluated (2^{10^9} is text)
MAX_TERMS = 64
MAX_RADICAND = 10**8  # square roots of larger numbers are not read (their square-free part needs factoring)
MAX_IRRATIONAL_POWER = 64
MAX_NESTING = 50  # parentheses, braces, \\frac and \\sqrt inside each other: deeper is not read (no RecursionError)
PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
Key = tuple[int, int]  # (square-free radicand, power of pi)


class TooLarge(ValueError):
    """An expression that reads as a number but is over the size limits: not evaluated, never equal to another."""


def _square_free(n: int) -> tuple[int, int]:
    """(s, m) with n = s^2 * m and m square-free, for 0 < n <= MAX_RADICAND."""
    if not 0 < n <= MAX_RADICAND:
        raise TooLarge("radicand out of range")
    outside, factor = 1, 2
    while factor * factor <= n:
        while n % (factor * factor) == 0:
            n //= factor * factor
            outside *= factor
        factor += 1 if factor == 2 else 2
    return outside, n


def _product_of_square_free(n1: int, n2: int) -> tuple[int, int]:
    """(s, m) with n1 * n2 = s^2 * m and m square-free, for square-free n1 and n2 (every radicand a Value holds):
    with g = gcd(n1, n2), n1 * n2 = g^2 * (n1/g) * (n2/g), and the coprime square-free n1/g, n2/g multiply to a
    square-free number. No factoring: trial division of every product (4,096 of them for two 64-term sums of
    roots near 10^4) let one answer hold the scorer for seconds."""
    common = math.gcd(n1, n2)
    radicand = (n1 // common) * (n2 // common)
    if radicand > MAX_RADICAND:
        raise TooLarge("radicand out of range")
    return common, radicand


class Value:
    """Σ terms[(n, k)] · √n · π^k (module docstring); immutable once made."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Key, Fraction]) -> None:
        kept = {key: q for key, q in terms.items() if q}
        if len(kept) > MAX_TERMS or any(_bits(q) > MAX_BITS for q in kept.values()):
            raise TooLarge("value too large to evaluate")
        self.terms = kept

    @staticmethod
    def of(number) -> Value:
        return Value({(1, 0): Fraction(number)})

    def rational(self) -> Fraction | None:
        """The value when it is rational (no root, no pi), else None."""
        if not self.terms:
            return Fraction(0)
        return self.terms.get((1, 0)) if set(self.terms) == {(1, 0)} else None

    def key(self) -> frozenset:
        return frozenset(self.terms.items())

    def approximate(self) -> decimal.Decimal:
        with decimal.localcontext(decimal.Context(prec=60)):
            total = decimal.Decimal(0)
            for (radicand, power), q in self.terms.items():
                term = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)
                total += term * decimal.Decimal(radicand).sqrt() * PI**power
            return total

    def __add__(self, other: Value) -> Value:
        terms = dict(self.terms)
        for key, q in other.terms.items():
            terms[key] = terms.get(key, Fraction(0)) + q
        return Value(terms)

    def __neg__(self) -> Value:
        return Value({key: -q for key, q in self.terms.items()})

    def __sub__(self, other: Value) -> Value:
        return self + (-other)

    def __mul__(self, other: Value) -> Value:
        terms: dict[Key, Fraction] = {}
        for (n1, k1), q1 in self.terms.items():
            for (n2, k2), q2 in other.terms.items():
                outside, radicand = _product_of_square_free(n1, n2)
                key = (radicand, k1 + k2)
                terms[key] = terms.get(key, Fraction(0)) + q1 * q2 * outside
        return Value(terms)

    def inverse(self) -> Value:
        """1 / self, for one term only (c·√n·π^k -> √n / (c·n) · π^-k)."""
        if len(self.terms) != 1:
            raise ValueError("division by a sum of terms is not read")
        ((radicand, power), q), *_ = self.terms.items()
        return Value({(radicand, -power): 1 / (q * radicand)})

    def __truediv__(self, other: Value) -> Value:
        return self * other.inverse()

    def power(self, exponent: Value) -> Value:
        whole = exponent.rational()
        if whole is None or whole.denominator != 1:
            raise ValueError("only integer powers are read")
        count = int(whole)
        base = self.rational()
        if base is not None:
            size = max(abs(base.numerator), abs(base.denominator), 1).bit_length()
            if abs(count) * size > MAX_BITS:
                raise TooLarge("power too large to evaluate")
            return Value.of(base**count)
        if abs(count) > MAX_IRRATIONAL_POWER:
            raise TooLarge("power too large to evaluate")
        result, factor = Value.of(1), self if count >= 0 else self.inverse()
        for _ in range(abs(count)):
            result = result * factor
        return result

    def square_root(self) -> Value:
        base = self.rational()
        if base is None or base < 0:
            raise ValueError("only square roots of non-negative rationals are read")
        if base == 0:
            return Value.of(0)
        outside, radicand = _square_free(base.numerator * base.denominator)
        return Value({(radicand, 0): Fraction(outside, base.denominator)})


def _bits(q: Fraction) -> int:
    return max(abs(q.numerator), q.denominator).bit_length()


IMPLICIT = ("\\sqrt", "\\pi", "(")  # what may follow a factor with no operator between: 3\sqrt{2}, 2\pi, 2(x)


class Reader:
    """A recursive-descent reader over tokens (rlx.rewards.math_answer.TOKEN); raises ValueError."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at, self.depth = tokens, 0, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, *expected: str) -> str:
        token = self.peek()
        if token is None or (expected and token not in expected):
            raise ValueError(f"expected {expected}, got {token!r}")
        self.at += 1
        return token

    def whole(self) -> Value:
        value = self.expr()
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()!r}")
        return value

    def expr(self) -> Value:
        value = self.term()
        while self.peek() in ("+", "-"):
            value = value + self.term() if self.take() == "+" else value - self.term()
        return value

    def term(self) -> Value:
        value = self.unary()
        while True:
            token = self.peek()
            if token in ("*", "/", "\\cdot", "\\times", "\\div"):
                operator, right = self.take(), self.unary()
                value = value / right if operator in ("/", "\\div") else value * right
            elif token in IMPLICIT:
                value = value * self.power()
            else:
                return value

    def unary(self) -> Value:
        negative = False
        while self.peek() in ("-", "+"):
            negative ^= self.take() == "-"
        value = self.power()
        return -value if negative else value

    def power(self) -> Value:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.unary() if self.peek() in ("-", "+") else self.atom()
        return base.power(exponent)

    def atom(self) -> Value:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise ValueError("nested too deep to read")
            return self._atom(self.take())
        finally:
            self.depth -= 1

    def _atom(self, token: str) -> Value:
        if token in ("(", "{"):
            value = self.expr()
            self.take(")" if token == "(" else "}")
            return value
        if token == "\\frac":
            return self.group() / self.group()
        if token == "\\sqrt":
            return self.group().square_root()
        if token == "\\pi":
            return Value({(1, 1): Fraction(1)})
        if token[0].isdigit() or token[0] == ".":
            return Value.of(_literal(token))
        raise ValueError(f"unexpected {token!r}")

    def group(self) -> Value:
        """An argument of \\frac or \\sqrt: {expr}, \\pi, or one digit of a run (`\\frac12` is 1/2)."""
        if self.peek() in ("{", "\\pi"):
            return self.atom()
        token = self.take()
        if not token.isdigit():
            raise ValueError("\\frac and \\sqrt need {...} or digits")
        if len(token) > 1:  # \frac12: the first digit now, the rest is the next argument
            self.tokens[self.at - 1 : self.at] = [token[0], token[1:]]
            self.at -= 1
            return Value.of(int(self.take()))
        return Value.of(int(token))


def _literal(token: str) -> Fraction:
    mantissa, _, exponent = token.lower().partition("e")
    value = Fraction(mantissa)
    if exponent:
        if abs(int(exponent)) > 400:
            raise TooLarge("exponent too large to evaluate")
        value *= Fraction(10) ** int(exponent)
    return value


def same_real(predicted: Value, reference: Value) -> bool:
    return predicted.key() == reference.key()


def rounds_to(predicted: Value, reference: Fraction, digits: int) -> bool:
    """Whether `predicted` rounds to `reference` at `digits` after the point (half away from zero)."""
    if (exact := predicted.rational()) is not None:
        gap = abs(exact - reference) * 2 * 10**digits
        return gap < 1 or (gap == 1 and abs(exact) < abs(reference))  # 0.25 rounds to 0.3, 0.35 does not
    with decimal.localcontext(decimal.Context(prec=60)):
        target = decimal.Decimal(reference.numerator) / decimal.Decimal(reference.denominator)
        return abs(predicted.approximate() - target) * 2 * 10**digits < 1
