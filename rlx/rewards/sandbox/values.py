"""Exact-type value encoding shared by the harness (inside the sandbox) and the scorer (outside).

The candidate's results leave the sandbox only as this tagged JSON, and only plain built-in types encode:
an object with a custom `__eq__` (AlwaysEqual), an int subclass or any other user type is refused, so the
comparison that decides the verdict runs in the trainer process on data, never on the candidate's objects.
Comparison is exact (types included: a tuple is not a list, 1 is not 1.0 nor True) except floats, which
match within a relative tolerance of 1e-9 (and NaN equals NaN).
"""

from __future__ import annotations

import math

MAX_NODES = 20000
MAX_STR = 100_000


class Unencodable(TypeError):
    pass


def encode(value, budget: list[int] | None = None):
    budget = [MAX_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise Unencodable(f"value has more than {MAX_NODES} parts")
    kind = type(value)
    if value is None:
        return ["none"]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", str(value)]
    if kind is float:
        return ["float", repr(value)]
    if kind is str:
        if len(value) > MAX_STR:
            raise Unencodable(f"string longer than {MAX_STR}")
        return ["str", value]
    if kind in (list, tuple):
        return [kind.__name__, [encode(item, budget) for item in value]]
    if kind in (set, frozenset):
        return [kind.__name__, sorted((encode(item, budget) for item in value), key=repr)]
    if kind is dict:
        return ["dict", sorted(([encode(k, budget), encode(v, budget)] for k, v in value.items()), key=repr)]
    raise Unencodable(f"type {kind.__name__} is not a plain built-in value")


def matches(got, expected) -> bool:
    """Whether two encodings are equal (exact types; floats within rel 1e-9). `got` is untrusted JSON."""
    if not isinstance(got, list) or not got or got[0] != expected[0] or len(got) != len(expected):
        return False
    tag = expected[0]
    if tag == "float":
        try:
            a, b = float(got[1]), float(expected[1])
        except (TypeError, ValueError):
            return False
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    if tag in ("list", "tuple", "set", "frozenset"):
        return (
            isinstance(got[1], list)
            and len(got[1]) == len(expected[1])
            and all(matches(g, e) for g, e in zip(got[1], expected[1], strict=True))
        )
    if tag == "dict":
        return (
            isinstance(got[1], list)
            and len(got[1]) == len(expected[1])
            and all(
                isinstance(g, list) and len(g) == 2 and matches(g[0], e[0]) and matches(g[1], e[1])
                for g, e in zip(got[1], expected[1], strict=True)
            )
        )
    return got == expected
