"""How big a value graph (rlx.rewards.sandbox.values) is once every shared part is counted where it appears: what
`==`, `hash` and `repr` walk in the value `decode` would build. Counted before anything is built, without
recursion, since the graph is untrusted.

This file is copied into the jail (stdlib only), beside values.py.
"""

from __future__ import annotations

# values of every kind once every shared part is counted where it appears: what ==, hash and repr walk. A graph
# of 64 tuples, each holding the previous one twice, is 2^64 parts to them (a set of it never finishes hashing)
MAX_EXPANDED = 1_000_000


SEQUENCES = frozenset(("list", "tuple", "set", "frozenset", "deque"))


def _parts(node: list) -> list:
    """The values a node holds (references to other nodes among them); [] where its shape is malformed (the
    builders below refuse it)."""
    tag = node[0]
    position = {"named": 3, "obj": 2, "ddict": 2}.get(tag, 1)
    items = node[position] if len(node) > position and type(node[position]) is list else []
    if tag in ("dict", "odict", "counter", "ddict", "obj"):
        return [part for pair in items if type(pair) is list and len(pair) == 2 for part in pair]
    return [] if tag == "bytearray" else items


def _references(parts: list, count: int) -> list[int]:
    """The node indices among `parts` (each occurrence), well-formed references only."""
    try:
        found = [p[1] for p in parts if p[0] == "@"]  # parts are JSON values: one of them may not be indexable
        if all(type(i) is int and 0 <= i < count for i in found):
            return found
    except (TypeError, IndexError, KeyError):
        pass
    return [
        p[1]
        for p in parts
        if type(p) is list and len(p) == 2 and p[0] == "@" and type(p[1]) is int and 0 <= p[1] < count
    ]


def check_expanded(nodes: list) -> None:
    """ValueError when the value, every shared part counted where it appears, holds more than MAX_EXPANDED
    parts (a reference back to a node still being counted, a cycle, counts once: ==, hash and repr stop there).
    Iterative; each node's parts are read once."""
    count = len(nodes)
    children: list[list[int]] = []
    own = [0] * count  # parts of a node that are not references, plus itself
    for index, node in enumerate(nodes):
        items = node[1] if node[0] in SEQUENCES and len(node) > 1 and type(node[1]) is list else _parts(node)
        found = _references(items, count)
        children.append(found)
        own[index] = 1 + len(items) - len(found)
    expanded = [0 if children[i] else own[i] for i in range(count)]  # 0: not counted yet
    for start in range(count):
        if expanded[start]:
            continue
        open_ = {start}
        stack = [[start, 0, own[start]]]  # node, its next child, its total so far
        while stack:
            frame = stack[-1]
            refs, child = children[frame[0]], None
            while frame[1] < len(refs):
                candidate = refs[frame[1]]
                frame[1] += 1
                if not expanded[candidate] and candidate not in open_:
                    child = candidate
                    break
                frame[2] += expanded[candidate] or 1
            if child is not None:
                open_.add(child)
                stack.append([child, 0, own[child]])
                continue
            if frame[2] > MAX_EXPANDED:
                raise ValueError(f"a value of more than {MAX_EXPANDED} parts once its shared parts are repeated")
            expanded[frame[0]] = frame[2]
            open_.discard(frame[0])
            stack.pop()
            if stack:  # the parent counts this child now
                stack[-1][2] += frame[2]
