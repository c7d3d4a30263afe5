"""Exact-type value encoding between the candidate (inside the sandbox) and the checker (outside).

The candidate's results leave the sandbox only as this tagged JSON, and only plain built-in types encode: an
object with a custom `__eq__` (AlwaysEqual), an int subclass or any other user type is refused, so the
comparison that decides a verdict runs in the checker on plain values it rebuilt itself (`decode`), never on the
candidate's objects. `same` compares exactly (types included: a tuple is not a list, 1 is not 1.0 nor True)
except floats, which match within a relative tolerance of 1e-9 (and NaN equals NaN).

This file is copied into the jail (stdlib only). `decode` runs on untrusted data: it raises ValueError on
anything malformed or nested deeper than MAX_DEPTH, never RecursionError.
"""

from __future__ import annotations

import math

MAX_NODES = 20000
MAX_STR = 100_000
MAX_DEPTH = 64
SCALARS = {"none", "bool", "int", "float", "str"}


class Unencodable(TypeError):
    pass


def encode(value, budget: list[int] | None = None, depth: int = 0):
    budget = [MAX_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise Unencodable(f"value has more than {MAX_NODES} parts")
    if depth > MAX_DEPTH:
        raise Unencodable(f"value nested deeper than {MAX_DEPTH}")
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
        return [kind.__name__, [encode(item, budget, depth + 1) for item in value]]
    if kind in (set, frozenset):
        return [kind.__name__, [encode(item, budget, depth + 1) for item in value]]
    if kind is dict:
        return ["dict", [[encode(k, budget, depth + 1), encode(v, budget, depth + 1)] for k, v in value.items()]]
    raise Unencodable(f"type {kind.__name__} is not a plain built-in value")


def decode(data, depth: int = 0):
    """The plain value `data` encodes; ValueError when it is not a well-formed encoding (untrusted input)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_DEPTH}")
    if not (type(data) is list and data and type(data[0]) is str):
        raise ValueError("not a tagged value")
    tag, rest = data[0], data[1:]
    if tag == "none" and not rest:
        return None
    if len(rest) != 1:
        raise ValueError(f"malformed {tag!r} value")
    item = rest[0]
    if tag == "bool" and type(item) is bool:
        return item
    if tag == "int" and type(item) is str and len(item) <= 5000:
        return int(item)
    if tag == "float" and type(item) is str:
        return float(item)
    if tag == "str" and type(item) is str:
        return item
    if type(item) is not list:
        raise ValueError(f"malformed {tag!r} value")
    if tag in ("list", "tuple", "set", "frozenset"):
        items = [decode(x, depth + 1) for x in item]
        try:
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        except TypeError:  # an unhashable member of a set
            raise ValueError(f"unhashable member of a {tag}") from None
    if tag == "dict":
        out = {}
        for pair in item:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict entry")
            try:
                out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
            except TypeError:
                raise ValueError("unhashable dict key") from None
        return out
    raise ValueError(f"unknown tag {tag!r}")


def same(got, expected) -> bool:
    """Exact equality of two plain values (types included), floats within rel 1e-9, NaN equal to NaN.
    `got` must come from `decode` (plain built-ins, depth <= MAX_DEPTH); `expected` from the dataset."""
    if type(got) is not type(expected):
        return False
    if type(got) is float:
        return (math.isnan(got) and math.isnan(expected)) or math.isclose(got, expected, rel_tol=1e-9, abs_tol=0.0)
    if type(got) in (list, tuple):
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected, strict=True))
    if type(got) is dict:
        return got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in expected)
    return bool(got == expected)  # None, bool, int, str, set, frozenset of plain hashables
