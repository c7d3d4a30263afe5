"""Which objects of the test a candidate's reply refills in place (rlx.rewards.code.client, after a call whose
arguments the candidate changed): the nodes of the reply's graph (rlx.rewards.sandbox.values) that stand for the
test's own arguments, matched position by position, key by key and attribute by attribute."""

from __future__ import annotations

import collections

from rlx.rewards.sandbox.values import CLASSES, MUTABLE, Hooks, inline_value


def targets_for(graph: dict, pairs: list[tuple[object, object]]) -> dict[int, object]:
    """Which nodes of `graph` are the same objects as `pairs`' originals: (value, original) pairs, descended into
    position by position (lists, tuples), key by key (dicts, scalar keys) and attribute by attribute (objects),
    so that refilling them in place keeps the identity of every inner list a test may hold."""
    nodes, targets, claimed = graph.get("nodes", []), {}, set()
    todo = list(pairs)
    while todo:
        value, original = todo.pop()
        if not (type(value) is list and len(value) == 2 and value[0] == "@" and type(value[1]) is int):
            continue
        index = value[1]
        if not (0 <= index < len(nodes) and type(nodes[index]) is list and nodes[index]) or index in targets:
            continue
        node, tag = nodes[index], nodes[index][0]
        if tag in MUTABLE and id(original) not in claimed:
            fits = CLASSES.get(tag) is type(original) or (tag == "obj" and hasattr(original, "__dict__"))
            if not fits:
                continue
            targets[index] = original
            claimed.add(id(original))
        if tag in ("list", "tuple", "deque") and type(node[1]) is list:
            todo += [
                (v, o)
                for v, o in zip(node[1], list(original), strict=False)  # type: ignore[call-overload]
                if type(original) in (list, tuple, collections.deque)
            ]
        elif tag in ("dict", "odict", "counter", "ddict") and isinstance(original, dict):
            for pair in node[-1] if type(node[-1]) is list else []:
                key = _scalar_key(pair)
                if key is not None and key in original:
                    todo.append((pair[1], original[key]))
        elif tag == "obj" and type(node[2]) is list and hasattr(original, "__dict__"):
            todo += [
                (p[1], vars(original)[p[0]])
                for p in node[2]
                if type(p) is list and len(p) == 2 and p[0] in vars(original)
            ]
    return targets


def _scalar_key(pair):
    if type(pair) is list and len(pair) == 2 and type(pair[0]) is list and pair[0] and pair[0][0] in ("int", "str"):
        try:
            return inline_value(pair[0], [], Hooks())
        except ValueError:
            return None
    return None
