"""Runs inside the candidate's process (rlx.rewards.sandbox): loads the program and answers the checker's requests
about the objects that live here. It holds nothing secret: only the program and the values a test passes ever
reach it; expected values and every comparison stay in the checker (rlx.rewards.code), so whatever the candidate
does to this code (patch it, exit early, forge replies) it can only ever claim values, never decide a verdict.

Values cross as rlx.rewards.sandbox.values graphs. What is not built-in data stays here and crosses as a handle,
`["ref", h, kind, type name, class handle]`: the checker operates on it by request (call, attribute, item,
iteration, length, truth, text, state), so a class instance, a generator or a function returned by the candidate
works in the test as it would in one program. Instances of a class the test itself defines (named in `load`)
cross as `obj` nodes, namedtuples as `named`, and instances of subclasses of built-in types as their built-in
value (an `int` subclass is its int: its own `__eq__` never reaches the checker).

Requests (SANDBOX_API.md): load {code_from, names, classes, preamble, execute} -> {"ok", "globals": {name:
graph}} (the names the test reads, as the program left them); call {target, args[, kwargs], sync} (a list
graph, a dict graph; when `sync` and they changed, the reply is [result, args, kwargs] with "synced");
getattr / setattr {target, name[, value]}; getitem / setitem {target, key[, value]}; iter, len, truth, repr, str,
state {target}; next {target, n}; isinstance {target, cls}; eval {expr}; stdio {stdin}. A target is `["g", name]`
(a global of the program) or `["ref", h]`. Replies: {"value": graph} | {"error", "bases", "detail"}. While a
call runs, a callback the test passed (`["cb", id]`) sends {"op": "callback", "cb", "args"} and serves the
checker's nested requests until the checker answers {"value"} or {"raise"}.
"""

from __future__ import annotations

import builtins
import collections
import json
import sys
import types
from typing import Any

from rlx.rewards.code import console
from rlx.rewards.code.extract import choose
from rlx.rewards.sandbox.values import SAFE_BUILTINS, Encoder, Hooks, Unencodable, decode

DETAIL = 1000
TEXT = 100_000
MAX_DEPTH = 32  # callbacks inside callbacks
EXCEPTIONS = {c: n for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}
BY_NAME = {n: c for c, n in EXCEPTIONS.items()}
BASES = (int, float, str, bytes, list, tuple, dict, set, frozenset)
COPY: dict[type, Any] = {
    int: int.__index__,
    float: float.__float__,
    str: str.__str__,
    bytes: bytes,
    list: list,
    tuple: tuple,
}
COPY |= {dict: lambda v: dict(dict.items(v)), set: set, frozenset: frozenset}


def describe(err: BaseException) -> dict:
    """The reply for an exception: its type's name, the built-in exception classes it derives from, its text."""
    try:
        kind = type(err)
        bases = [EXCEPTIONS[c] for c in type.mro(kind) if c in EXCEPTIONS]
        reply: dict = {"error": str(kind.__name__)[:80], "bases": bases[:12], "detail": str(err)[:DETAIL]}
        if isinstance(err, Unencodable):
            reply |= {"bases": [], "unencodable": True}
        return reply
    except BaseException:  # noqa: BLE001 - a hostile exception must not break the reply
        return {"error": "?", "bases": [], "detail": ""}


class Server(Hooks):
    def __init__(self, program: str, receive, send) -> None:
        self.program, self.receive, self.send = program, receive, send
        # the program's module, made before the fork (fresh for each candidate, and no page of sys.modules
        # written per candidate); in sys.modules as dataclasses, pickle and typing expect
        self.namespace: dict = sys.modules["__candidate__"].__dict__
        self.code: types.CodeType | None = None  # the compiled program (stdio runs it once per case)
        self.classes: set[str] = set()  # classes the test defines: their instances cross as `obj` nodes
        self.handles: list = []
        self.handle_of: dict[int, int] = {}
        self.stubs: dict[int, object] = {}
        self.stub_ids: dict[int, int] = {}
        self.fallbacks: dict[str, type] = {}
        self.depth = 0

    # ---- values from the checker ------------------------------------------------------------------------
    def inline(self, data: list):
        tag = data[0]
        if tag == "ref" and len(data) == 2 and type(data[1]) is int and 0 <= data[1] < len(self.handles):
            return self.handles[data[1]]
        if tag == "g" and len(data) == 2 and type(data[1]) is str:
            if data[1] not in self.namespace:
                raise NameError(f"name {data[1]!r} is not defined")
            return self.namespace[data[1]]
        if tag == "builtin" and len(data) == 2 and type(data[1]) is str:
            return getattr(builtins, data[1])
        if tag == "cb" and len(data) == 3 and type(data[1]) is int:
            return self.stubs.get(data[1]) or self._stub(data[1], str(data[2]))
        raise ValueError(f"unknown tag {tag!r}")

    def new_object(self, name: str, handle):
        cls = self.namespace.get(name)
        if isinstance(cls, type):
            try:
                made: object = object.__new__(cls)
                vars(made)
                return made
            except (TypeError, AttributeError):
                pass
        if name not in self.fallbacks:  # the program has no such class: attributes still read as the test's
            self.fallbacks[name] = type(name, (), {"__repr__": lambda s: f"{name}({vars(s)})"})
        return object.__new__(self.fallbacks[name])

    def named(self, name: str, fields: list[str]):
        cls = self.namespace.get(name)
        if isinstance(cls, type) and issubclass(cls, tuple) and getattr(cls, "_fields", None) == tuple(fields):
            return cls
        return collections.namedtuple(name, fields)

    def _stub(self, number: int, name: str):
        def callback(*args, **kwargs):
            if self.depth >= MAX_DEPTH:
                raise RecursionError("callbacks nested too deep")
            self.depth += 1
            try:
                self.send({"op": "callback", "cb": number, "args": self.encode([list(args), kwargs])})
                while (message := self.receive()) is not None:
                    message = message[0]
                    if "op" in message:  # the checker asks something while our call waits
                        self.send(self.dispatch(message))
                    elif "raise" in message:
                        raise _rebuilt(message["raise"])
                    else:
                        return decode(message.get("value"), self)
                raise SystemExit(0)  # the checker closed the session
            finally:
                self.depth -= 1

        callback.__name__ = callback.__qualname__ = name if name.isidentifier() else "callback"
        self.stubs[number], self.stub_ids[id(callback)] = callback, number
        return callback

    # ---- values to the checker --------------------------------------------------------------------------
    def encode(self, value) -> dict:
        kind = type(value)  # the common replies without an encoder: each object touched costs a page fault
        if kind is bool or value is None:
            return {"root": ["bool", value] if kind is bool else ["none"]}
        if (kind is int and -(10**18) < value < 10**18) or kind is str and len(value) <= 1000:
            return {"root": ["int" if kind is int else "str", str(value)]}
        return Encoder(self.other).encode(value)

    def handle(self, value) -> int:
        number = self.handle_of.get(id(value))
        if number is None:
            number = self.handle_of[id(value)] = len(self.handles)
            self.handles.append(value)  # kept alive: its id is never reused in this session
        return number

    def other(self, value, encoder: Encoder):
        kind = type(value)
        if kind is types.FunctionType and id(value) not in self.stub_ids:  # the common case: a function
            return self.reference(value)
        if id(value) in self.stub_ids:
            return ["cb", self.stub_ids[id(value)], ""]
        name = getattr(value, "__name__", None)
        if name in SAFE_BUILTINS and getattr(builtins, name, None) is value:
            return ["builtin", name]
        fields = getattr(kind, "_fields", None) if isinstance(value, tuple) else None
        if type(fields) is tuple and all(type(f) is str and f.isidentifier() for f in fields):
            return encoder.named(value, fields)
        if kind.__name__ in self.classes and isinstance(getattr(value, "__dict__", None), dict):
            return encoder.instance(value)
        base = next((b for b in BASES if issubclass(kind, b)), None)  # by its type: __class__ can lie
        if base is not None and kind.__module__ not in ("builtins", "collections"):
            return encoder.value(COPY[base](value))  # its built-in value: the subclass's own methods stay here
        return self.reference(value)

    def reference(self, value) -> list:
        kind = type(value)
        shape = "iterator" if hasattr(kind, "__next__") else "callable" if callable(value) else "object"
        return ["ref", self.handle(value), shape, str(kind.__name__)[:80], self.handle(kind)]

    # ---- requests ---------------------------------------------------------------------------------------
    def target(self, message: dict):
        return self.inline(message["target"])

    def dispatch(self, message: dict) -> dict:
        op = message.get("op")
        try:
            if op == "load":
                return self.load(message)
            if op == "stdio":
                return self.stdio(message["stdin"])
            if op == "call":
                return self.call(message)
            if op == "next":
                return self.next(self.target(message), message.get("n", 1))
            return {"value": self.encode(self.simple(op, message))}
        except BaseException as err:  # noqa: BLE001 - SystemExit and MemoryError included: labelled by the checker
            return describe(err)

    def simple(self, op, message: dict):
        if op == "eval":
            return eval(message["expr"], self.namespace)
        obj = self.target(message)
        if op == "getattr":
            return getattr(obj, message["name"])
        if op == "setattr":
            return setattr(obj, message["name"], decode(message["value"], self))
        if op == "getitem":
            return obj[decode(message["key"], self)]
        if op == "setitem":
            obj[decode(message["key"], self)] = decode(message["value"], self)
            return None
        if op == "iter":
            return iter(obj)
        if op == "len":
            return len(obj)
        if op == "truth":
            return bool(obj)
        if op in ("repr", "str"):
            return (repr if op == "repr" else str)(obj)[:TEXT]
        if op == "state":
            state = vars(obj) if isinstance(getattr(obj, "__dict__", None), dict) else None
            return [type(obj), None if state is None else dict(state)]
        if op == "isinstance":
            return isinstance(obj, self.inline(message["cls"]))
        raise ValueError(f"unknown op {op!r}")

    def call(self, message: dict) -> dict:
        function = self.target(message)
        args = decode(message["args"], self)
        kwargs = decode(message["kwargs"], self) if "kwargs" in message else {}
        result = function(*args, **kwargs)
        if message.get("sync"):  # the arguments as they are now, when they changed: the checker refills its own
            now = [self.encode(args), self.encode(kwargs) if kwargs else None]
            if json.dumps(now) != json.dumps([message["args"], message.get("kwargs")]):
                return {"value": self.encode([result, args, kwargs]), "synced": True}
        return {"value": self.encode(result)}

    def next(self, iterator, n) -> dict:
        items: list = []
        end: str | dict | None = None
        for _ in range(max(1, min(int(n), 256))):
            try:
                items.append(next(iterator))
            except StopIteration:
                end = "stop"
                break
            except BaseException as err:  # noqa: BLE001 - raised in order, after the items before it
                end = describe(err)
                break
        return {"value": self.encode(items), "end": end}

    def load(self, message: dict) -> dict:
        self.classes = set(message.get("classes", []))
        code = choose(self.program, message.get("code_from", "completion"), list(message.get("names", [])))
        self.code = compiled = compile(message.get("preamble", "") + code, "<candidate>", "exec")
        if not message.get("execute", True):
            return {"ok": True}
        exec(compiled, self.namespace)
        found = {}  # the names the test reads: data as it is now, everything else as a handle
        for name in message.get("names", []):
            if name in self.namespace:
                value = self.namespace[name]
                try:
                    function = type(value) is types.FunctionType and id(value) not in self.stub_ids
                    found[name] = {"root": self.reference(value)} if function else self.encode(value)
                except Unencodable:
                    found[name] = {"root": self.reference(value)}
        return {"ok": True, "globals": found}

    def stdio(self, stdin: str) -> dict:
        """Run the program as __main__ in fresh globals on `stdin` (file descriptors 0 and 1 of its own,
        rlx.rewards.code.console); its stdout comes back as text."""
        result = console.run(self.code or compile("", "<candidate>", "exec"), stdin)
        error = result["error"]
        return {**result, "error": None if error is None else describe(error)["error"]}


def _rebuilt(reply) -> BaseException:
    """The checker's exception, as the nearest built-in class of this process (a callback that raised)."""
    bases = reply.get("bases", []) if isinstance(reply, dict) else []
    cls = next((BY_NAME[b] for b in bases if b in BY_NAME and issubclass(BY_NAME[b], Exception)), Exception)
    return cls(str(reply.get("detail", ""))[:DETAIL] if isinstance(reply, dict) else "")


def fresh_module() -> None:
    sys.modules["__candidate__"] = types.ModuleType("__candidate__")
    console.install_exits()


WARM_PROGRAM = "def f(a, b=1):\n    a.append(b)\n    return (a, {'k': [b]}, f, (x for x in a))\n"


def warm() -> None:
    """The usual requests, a few dozen times, in the zygote before it forks candidates (zygote._warm)."""

    for _ in range(40):
        requests = [
            {"op": "load", "code_from": "completion", "names": ["f"], "classes": [], "preamble": ""},
            {"op": "call", "target": ["g", "f"], "args": Encoder().encode([[1, 2.5, "x", None, True]]), "sync": True},
            {"op": "call", "target": ["g", "f"], "args": Encoder().encode([[3]]), "kwargs": Encoder().encode({"b": 2})},
            {"op": "getattr", "target": ["g", "f"], "name": "__name__"},
        ]
        replies: list = []
        fresh_module()
        serve(WARM_PROGRAM, iter([(r, []) for r in requests] + [None]).__next__, replies.append)
    console.warm()
    fresh_module()


fresh_module()


def serve(program: str, receive, send) -> None:
    server = Server(program, receive, send)
    while (request := receive()) is not None:
        message = request[0]
        if "op" in message:
            send(server.dispatch(message))
