"""Values between the checker (outside the sandbox) and a candidate's process (inside), both ways, as a flat graph
of tagged JSON: `{"root": <value>, "nodes": [<node>, ...]}`.

A value is inline (`["none"]`, `["bool", b]`, `["int", "12"]`, `["float", "0.5"]`, `["str", s]`, `["complex",
re, im]`, `["bytes", latin-1 text]`, `["fraction", n, d]`, `["decimal", s]`, `["range", a, b, c]`, `["date" |
"datetime" | "time", iso]`, `["timedelta", d, s, us]`), a reference `["@", i]` to node i, or a tag this module
leaves to its caller's `Hooks` (handles to objects living on the other side, callbacks). Nodes hold containers
(`list`, `tuple`, `set`, `frozenset`, `dict`, `bytearray`, `deque`, `odict`, `counter`, `ddict`), namedtuples
(`named`) and objects of a class both sides know by name (`obj`), their parts as values. The graph is flat, so a
linked list of 10,000 nodes or a list that holds itself crosses without recursion, and a value shared by two
places (an argument passed twice) stays shared.

Only exact built-in types encode here; anything else goes to the encoder's `other` (the candidate's harness
makes it a handle; the checker a callback or a trusted object) or is refused (`Unencodable`). `decode` runs on
untrusted graphs: anything malformed or over the limits raises ValueError, never anything else of its own;
it builds exact built-in types and asks `Hooks` for everything else, so the objects a checker gets back are
its own (their `==` is Python's or the checker's, never the candidate's). `decode(..., targets=)` refills
existing objects in place (rlx.rewards.code.refill picks them): how a candidate's mutation of an argument reaches
the test's own list.

This file is copied into the jail (stdlib only).
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
from typing import Any

from rlx.rewards.sandbox.value_sizes import check_expanded

MAX_NODES = 20_000  # containers and objects in one value
MAX_PARTS = 200_000  # values of every kind in one graph
MAX_STR = 100_000
MAX_DIGITS = 4000
MUTABLE = {"list", "dict", "set", "bytearray", "deque", "odict", "counter", "ddict", "obj"}
IMMUTABLE = {"tuple", "frozenset", "named"}
FACTORIES: dict[str, type] = {f.__name__: f for f in (int, float, str, list, dict, set, tuple, frozenset)}
CONTAINERS: dict[type, str] = {
    list: "list",
    tuple: "tuple",
    set: "set",
    frozenset: "frozenset",
    dict: "dict",
    bytearray: "bytearray",
    collections.deque: "deque",
    collections.OrderedDict: "odict",
    collections.Counter: "counter",
    collections.defaultdict: "ddict",
}
CLASSES = {"list": list, "set": set, "dict": dict, "bytearray": bytearray, "deque": collections.deque}
CLASSES |= {"odict": collections.OrderedDict, "counter": collections.Counter, "ddict": collections.defaultdict}


# built-in functions and types that cross by name, as the receiving side's own (pure ones only: a candidate that
# returns `eval` or `open` gets a handle, never the checker's own `eval` to be called by a test)
SAFE_BUILTINS = frozenset(
    "abs all any ascii bin bool bytearray bytes callable chr complex dict divmod enumerate filter float format "
    "frozenset hash hex int isinstance issubclass iter len list map max min next oct ord pow range repr reversed "
    "round set sorted str sum tuple zip".split()
)


class Unencodable(TypeError):
    pass


def _text(value: str) -> str:
    if len(value) > MAX_STR:
        raise Unencodable(f"a string longer than {MAX_STR}")
    return value


def _encode_int(value: int) -> list:
    if value.bit_length() > MAX_DIGITS * 3.3:
        raise Unencodable(f"an integer of more than {MAX_DIGITS} digits")
    return ["int", str(value)]


def _moment(value) -> list | None:
    if getattr(value, "tzinfo", None) is not None and type(value.tzinfo) is not datetime.timezone:
        return None  # a zone this encoding cannot carry: a handle instead
    return [type(value).__name__, value.isoformat()]


SCALARS = {  # exact type -> its inline form (None: not encodable here after all)
    type(None): lambda v: ["none"],
    bool: lambda v: ["bool", v],
    int: _encode_int,
    float: lambda v: ["float", repr(v)],
    str: lambda v: ["str", _text(v)],
    complex: lambda v: ["complex", repr(v.real), repr(v.imag)],
    bytes: lambda v: ["bytes", _text(v.decode("latin-1"))],
    fractions.Fraction: lambda v: ["fraction", str(v.numerator), str(v.denominator)],
    decimal.Decimal: lambda v: ["decimal", str(v)],
    range: lambda v: ["range", str(v.start), str(v.stop), str(v.step)],
    datetime.date: _moment,
    datetime.datetime: _moment,
    datetime.time: _moment,
    datetime.timedelta: lambda v: ["timedelta", v.days, v.seconds, v.microseconds],
}


class Encoder:
    """One graph. `other(value, encoder)` encodes what is not built-in data (or raises Unencodable); it may add
    nodes of its own with `node`."""

    def __init__(self, other=None) -> None:
        self.other = other
        self.nodes: list = []
        self.memo: dict[int, int] = {}
        self.alive: list = []  # everything given an index, so that no id is reused while encoding
        self.todo: list = []
        self.parts = 0

    def encode(self, value) -> dict:
        root = self.value(value)
        while self.todo:
            index, fill, item = self.todo.pop()
            self.nodes[index] = fill(item) if fill is not None else self._container(item)
        return {"root": root, "nodes": self.nodes}

    def value(self, value):
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise Unencodable(f"a value of more than {MAX_PARTS} parts")
        kind = type(value)
        scalar = SCALARS.get(kind)
        if scalar is not None:
            inline = scalar(value)
            if inline is not None:
                return inline
        elif kind in CONTAINERS:
            return self.node(value)
        if self.other is None:
            raise Unencodable(f"type {kind.__name__} is not a plain built-in value")
        return self.other(value, self)

    def node(self, key, fill=None) -> list:
        """A reference to the node for the object `key`; `fill(key)` makes its content (once per object; a
        built-in container's own by default)."""
        index = self.memo.get(id(key))
        if index is None:
            if len(self.nodes) >= MAX_NODES:
                raise Unencodable(f"a value of more than {MAX_NODES} containers")
            index = self.memo[id(key)] = len(self.nodes)
            self.nodes.append(None)
            self.alive.append(key)
            self.todo.append((index, fill, key))
        return ["@", index]

    def named(self, value, fields: tuple) -> list:
        """A namedtuple (an instance of a tuple subclass with `fields`): its items, with its names."""
        name = type(value).__name__
        return self.node(value, lambda v: ["named", name, list(fields), [self.value(i) for i in tuple.__iter__(v)]])

    def instance(self, value) -> list:
        """An object of a class both sides know by name: its attributes."""
        name = type(value).__name__
        return self.node(value, lambda v: ["obj", name, [[k, self.value(x)] for k, x in list(vars(v).items())], None])

    def _container(self, value) -> list:
        kind = CONTAINERS[type(value)]
        if kind == "bytearray":
            return [kind, _text(value.decode("latin-1"))]
        if kind in ("dict", "odict", "counter", "ddict"):
            pairs = [[self.value(k), self.value(v)] for k, v in list(value.items())]
            if kind == "ddict":
                name = getattr(value.default_factory, "__name__", "")
                return [kind, name if FACTORIES.get(name) is value.default_factory else None, pairs]
            return [kind, pairs]
        items = [self.value(item) for item in list(value)]
        return [kind, items, value.maxlen] if kind == "deque" else [kind, items]


class Hooks:
    """What a decoder builds for what this module does not know; the default refuses all of it."""

    def inline(self, data: list):
        raise ValueError(f"unknown tag {data[0]!r}")

    def new_object(self, name: str, handle):
        raise ValueError(f"no class {name!r} to build an object of")

    def named(self, name: str, fields: list[str]):
        raise ValueError("namedtuples are not accepted here")


def _int(text) -> int:
    if type(text) is not str or len(text) > MAX_DIGITS:
        raise ValueError("malformed integer")
    return int(text)


def _text_of(text) -> str:
    if type(text) is not str or len(text) > MAX_STR:
        raise ValueError("malformed text")
    return text


def _flag(value) -> bool:
    if type(value) is not bool:
        raise ValueError("malformed bool")
    return value


def _small_float(text) -> float:
    if type(text) is not str or len(text) > 40:
        raise ValueError("malformed float")
    return float(text)


def _whole(value) -> int:
    if type(value) is not int:
        raise ValueError("malformed timedelta")
    return value


# tag -> (number of fields, builder of the value from them); each checks what it is given (untrusted)
BUILDERS: dict[str, tuple[int, Any]] = {
    "none": (0, lambda: None),
    "bool": (1, _flag),
    "int": (1, _int),
    "float": (1, _small_float),
    "str": (1, _text_of),
    "bytes": (1, lambda t: _text_of(t).encode("latin-1")),
    "decimal": (1, lambda t: decimal.Decimal(_text_of(t))),
    "date": (1, lambda t: datetime.date.fromisoformat(_text_of(t))),
    "datetime": (1, lambda t: datetime.datetime.fromisoformat(_text_of(t))),
    "time": (1, lambda t: datetime.time.fromisoformat(_text_of(t))),
    "complex": (2, lambda re, im: complex(_small_float(re), _small_float(im))),
    "fraction": (2, lambda n, d: fractions.Fraction(_int(n), _int(d))),
    "range": (3, lambda a, b, c: range(_int(a), _int(b), _int(c))),
    "timedelta": (3, lambda d, s, us: datetime.timedelta(_whole(d), _whole(s), _whole(us))),
}


def inline_value(data, objects: list, hooks: Hooks):
    """One inline value of a graph (`objects`: the graph's nodes, built); ValueError when it is malformed."""
    if not (type(data) is list and data and type(data[0]) is str):
        raise ValueError("not a tagged value")
    tag = data[0]
    if len(data) == 2:  # the common tags, here: each function a candidate calls costs it page faults
        item = data[1]
        if tag == "int" and type(item) is str and len(item) <= MAX_DIGITS:
            return int(item)
        if tag == "str" and type(item) is str and len(item) <= MAX_STR:
            return item
        if tag == "@" and type(item) is int and 0 <= item < len(objects):
            return objects[item]
    builder = BUILDERS.get(tag)
    if builder is None:
        if tag == "@":
            raise ValueError("malformed reference")
        return hooks.inline(data)
    if len(data) != builder[0] + 1:
        raise ValueError(f"malformed {tag}")
    try:
        return builder[1](*data[1:])
    except (ArithmeticError, UnicodeError) as err:
        raise ValueError(f"malformed {tag}") from err


def _items(node: list, position: int = 1) -> list:
    if len(node) <= position or type(node[position]) is not list:
        raise ValueError(f"malformed {node[0]!r} node")
    return node[position]


def _pairs(node: list) -> list:
    pairs = _items(node, 2 if node[0] == "ddict" else 1)
    if not all(type(p) is list and len(p) == 2 for p in pairs):
        raise ValueError("malformed mapping entry")
    return pairs


def _names(items) -> list[str]:
    if type(items) is not list or not all(type(n) is str and n.isidentifier() for n in items):
        raise ValueError("malformed names")
    return items


def _shell(node: list, index: int, hooks: Hooks, targets: dict):
    tag = node[0]
    target = targets.get(index)
    if tag == "obj":
        if len(node) != 4 or type(node[1]) is not str:
            raise ValueError("malformed obj node")
        return target if target is not None else hooks.new_object(node[1], node[3])
    if target is not None and type(target) is CLASSES[tag]:
        return target
    if tag == "ddict":
        factory = node[1]
        if factory is not None and factory not in FACTORIES:
            raise ValueError("unknown default factory")
        return collections.defaultdict(FACTORIES.get(factory))
    if tag == "deque":
        maxlen = node[2] if len(node) == 3 else None
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise ValueError("malformed deque")
        return collections.deque(maxlen=maxlen)
    return CLASSES[tag]()


def decode(graph, hooks: Hooks | None = None, targets: dict | None = None):
    """The value `graph` encodes; ValueError when it is malformed (untrusted input). `targets`: node index ->
    an existing object of the same kind to refill in place instead of building a new one."""
    hooks, targets = hooks or Hooks(), targets or {}
    if not (type(graph) is dict and "root" in graph and type(graph.get("nodes", [])) is list):
        raise ValueError("not a value graph")
    nodes = graph.get("nodes", [])
    if not nodes:  # a scalar, a handle: nothing to build
        return inline_value(graph["root"], [], hooks)
    if len(nodes) == 1 and graph["root"] == ["@", 0] and type(nodes[0]) is list and len(nodes[0]) == 2:
        if nodes[0][0] == "list" and type(nodes[0][1]) is list and 0 not in targets:  # arguments, mostly
            made: list = []
            made.extend(inline_value(item, [made], hooks) for item in nodes[0][1])
            return made
    if len(nodes) > MAX_NODES:
        raise ValueError(f"more than {MAX_NODES} nodes")
    objects: list = [None] * len(nodes)
    for index, node in enumerate(nodes):
        if not (type(node) is list and node and node[0] in MUTABLE | IMMUTABLE):
            raise ValueError(f"malformed node {index}")
        if node[0] in MUTABLE:
            objects[index] = _shell(node, index, hooks, targets)
    check_expanded(nodes)
    try:
        _build_immutables(nodes, objects, hooks)
        for tag_first in (True, False):  # objects' attributes first: a set of objects may hash them
            for index, node in enumerate(nodes):
                if node[0] in MUTABLE and (node[0] == "obj") == tag_first:
                    _fill(node, objects[index], objects, hooks, index in targets)
        return inline_value(graph["root"], objects, hooks)
    except (TypeError, OverflowError, RecursionError) as err:  # unhashable keys, huge ranges, hostile hashing
        raise ValueError(f"malformed value ({type(err).__name__}: {err})") from None


def _build_immutables(nodes: list, objects: list, hooks: Hooks) -> None:
    """Tuples, frozensets and namedtuples, each after the immutables it holds (no recursion)."""
    built = [node[0] in MUTABLE for node in nodes]
    if all(built):
        return
    for start in range(len(nodes)):
        stack, waiting = [start], {start}
        while stack and not built[stack[-1]]:
            index = stack[-1]
            node = nodes[index]
            items = _items(node, 3 if node[0] == "named" else 1)
            pending = [
                i[1]
                for i in items
                if type(i) is list and len(i) == 2 and i[0] == "@" and type(i[1]) is int and 0 <= i[1] < len(nodes)
                if not built[i[1]]
            ]
            if pending:
                if any(p in waiting for p in pending):
                    raise ValueError("an immutable value that holds itself")
                stack.append(pending[0])
                waiting.add(pending[0])
                continue
            values = [inline_value(i, objects, hooks) for i in items]
            if node[0] == "named":
                if len(node) != 4 or type(node[1]) is not str:
                    raise ValueError("malformed named node")
                objects[index] = hooks.named(node[1], _names(node[2]))._make(values)
            else:
                objects[index] = (tuple if node[0] == "tuple" else frozenset)(values)
            built[index] = True
            stack.pop()
            waiting.discard(index)


def _fill(node: list, shell, objects: list, hooks: Hooks, refill: bool) -> None:
    tag = node[0]
    if tag == "obj":
        attributes = _pairs(["obj", node[2]])
        state = {}
        for name, value in attributes:
            if type(name) is not str or not name.isidentifier() or name.startswith("__"):
                raise ValueError("malformed attribute name")
            state[name] = inline_value(value, objects, hooks)
        holder = vars(shell)
        holder.clear()
        holder.update(state)
        return
    if tag == "bytearray":
        if len(node) != 2 or type(node[1]) is not str or len(node[1]) > MAX_STR:
            raise ValueError("malformed bytearray")
        shell[:] = node[1].encode("latin-1")
        return
    if refill:
        shell.clear()
    if tag in ("dict", "odict", "counter", "ddict"):
        for key, value in _pairs(node):
            shell[inline_value(key, objects, hooks)] = inline_value(value, objects, hooks)
    elif tag == "set":
        shell.update(inline_value(item, objects, hooks) for item in _items(node))
    else:  # list, deque
        shell.extend(inline_value(item, objects, hooks) for item in _items(node))
