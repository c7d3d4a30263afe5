"""Plain data across the pipe between the checker and the candidate's process, both ways.

Only exact built-in types encode (None, bool, int, float, str, list, tuple, set, frozenset, dict, nested): an
int subclass, an object with its own `__eq__`, a generator are refused (`Unencodable`), so nothing the
candidate defined ever reaches the checker. Unlike rlx.rewards.sandbox.values (which sorts a dict's items for
its exact comparison), a dict keeps its insertion order: Python code can observe it (HumanEval/95's answer
depends on it), so a value is rebuilt as the function received or returned it.
"""

from __future__ import annotations

from rlx.rewards.sandbox.values import MAX_NODES, MAX_STR, Unencodable


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
    if kind in (list, tuple, set, frozenset):
        return [kind.__name__, [encode(item, budget) for item in value]]
    if kind is dict:
        return ["dict", [[encode(k, budget), encode(v, budget)] for k, v in value.items()]]
    raise Unencodable(f"a {kind.__name__}, not plain built-in data")


class Malformed(ValueError):
    """An encoding that does not describe plain data (the candidate's process wrote it: untrusted)."""


def decode(encoded):
    """The plain Python value an rlx.rewards.sandbox.values encoding stands for; Malformed when it is not one."""
    if not isinstance(encoded, list) or not encoded or not isinstance(encoded[0], str):
        raise Malformed(f"not an encoded value: {encoded!r:.80}")
    tag, body = encoded[0], encoded[1:]
    try:
        if tag == "none" and not body:
            return None
        (item,) = body
        if tag == "bool" and type(item) is bool:
            return item
        if tag == "int" and isinstance(item, str):
            return int(item)
        if tag == "float" and isinstance(item, str):
            return float(item)
        if tag == "str" and isinstance(item, str):
            return item
        if tag in ("list", "tuple", "set", "frozenset") and isinstance(item, list):
            kind = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag]
            return kind(decode(part) for part in item)
        if tag == "dict" and isinstance(item, list):
            return {decode(pair[0]): decode(pair[1]) for pair in item if _pair(pair)}
    except (ValueError, TypeError) as err:  # int("x"), an unhashable key, a wrong arity
        raise Malformed(f"bad {tag} encoding: {err}") from None
    raise Malformed(f"bad {tag} encoding: {encoded!r:.80}")


def _pair(pair) -> bool:
    if isinstance(pair, list) and len(pair) == 2:
        return True
    raise Malformed(f"bad dict item: {pair!r:.80}")
