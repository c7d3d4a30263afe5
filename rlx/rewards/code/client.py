"""The checker's end of one candidate session: requests about the candidate's objects, one at a time, each with a
deadline (rlx.rewards.unit_tests_harness is the other end; rlx.rewards.code.remote the objects).

What the test passes crosses as a copy, and comes back: after a call whose arguments hold lists, dicts, sets or
objects, the candidate sends them as they are now (only when they changed) and they are refilled in place here,
so an in-place sort or an appended item is what the test sees in its own list, inner lists included. Callables
the test passes (a lambda, a key function, a class of the test's) stay here: the candidate's call of one is a
callback, run here on the values it sends, while this end waits for the call's reply. Values that come back are
built by rlx.rewards.sandbox.values and the `Hooks` below, so they are plain data, objects of the test's own
classes, namedtuples made here, or `Remote`s: nothing of the candidate's code ever runs in this process.
"""

from __future__ import annotations

import builtins
import collections
import functools
import keyword

from rlx.rewards.code.refill import targets_for
from rlx.rewards.code.remote import ArgumentNotPlain, CandidateAbort, Remote, SessionEnded, kind_of, rebuild
from rlx.rewards.sandbox.session import Ended, Session
from rlx.rewards.sandbox.values import MUTABLE, SAFE_BUILTINS, Encoder, Hooks, Unencodable, decode

BUILTINS = {id(getattr(builtins, n)): n for n in SAFE_BUILTINS}
MAX_DEPTH = 16  # callbacks of the test's own that call the candidate again, nested
MAX_NAMED = 64  # distinct namedtuple types one session may send


@functools.lru_cache(maxsize=256)
def _namedtuple(name: str, fields: tuple[str, ...]) -> type:
    valid = [name, *fields]
    if len(fields) > 64 or len(set(fields)) != len(fields) or any(keyword.iskeyword(n) for n in valid):
        raise ValueError("not a namedtuple's names")
    if any(f.startswith("_") for f in fields):
        raise ValueError("not a namedtuple's names")
    return collections.namedtuple(name, fields)


class Client(Hooks):
    def __init__(self, session: Session, timeout_s: float, classes: dict[str, type]) -> None:
        self.session, self.timeout_s, self.classes = session, timeout_s, classes
        self.remotes: dict[int, Remote] = {}
        self.callbacks: list = []
        self.callback_of: dict[int, int] = {}
        self.calls = 0  # calls of the candidate's functions (an assert that made none tested nothing)
        self.dead: SessionEnded | None = None
        self.depth = 0
        self.comparing: set[tuple[int, int]] = set()
        self.named_types: set[tuple[str, tuple[str, ...]]] = set()

    # ---- the wire -----------------------------------------------------------------------------------------
    def _exchange(self, message: dict) -> dict:
        if self.dead is not None:
            raise self.dead
        if self.depth >= MAX_DEPTH:
            raise RecursionError("the test and the candidate call each other too deep")
        self.depth += 1
        try:
            self.session.send(message)
            while True:
                reply = self.session.receive(self.timeout_s)[0]
                if reply.get("op") != "callback":
                    return reply
                self._callback(reply)
        except Ended as ended:
            self.dead = SessionEnded(ended.status.value, ended.reason[:300])
            self.dead.status = ended.status  # type: ignore[attr-defined]
            raise self.dead from None
        finally:
            self.depth -= 1

    def _value(self, reply: dict, targets: dict | None = None, call: bool = False):
        if "error" in reply:
            raise rebuild(reply, call)
        try:
            return decode(reply.get("value"), self, targets)
        except ValueError as err:  # a forged or garbled reply: the candidate broke the protocol
            self.dead = SessionEnded("Garbled", str(err)[:300])
            raise self.dead from None

    def globals(self, found, names: list[str]) -> dict:
        """The candidate's globals the test reads, from the load reply (data as values, the rest as Remotes)."""
        if not isinstance(found, dict):
            raise SessionEnded("Garbled", "the program's names came back malformed")
        return {name: self._value({"value": found[name]}) for name in names if name in found}

    def ask(self, op: str, **fields):
        return self._value(self._exchange({"op": op, **fields}))

    def encode(self, value) -> dict:
        try:
            return Encoder(self.other).encode(value)
        except Unencodable as err:
            raise ArgumentNotPlain(f"the test passes {err}") from None

    # ---- calls --------------------------------------------------------------------------------------------
    def call(self, target: list, args: tuple, kwargs: dict):
        self.calls += 1
        message: dict = {"op": "call", "target": target, "args": self.encode(list(args))}
        if kwargs:
            message["kwargs"] = self.encode(kwargs)
        graphs = [message["args"], message.get("kwargs", {"nodes": []})]
        # something the candidate could change: then it sends the arguments back when it did
        message["sync"] = any(node[0] in MUTABLE for graph in graphs for node in graph["nodes"][1:])
        reply = self._exchange(message)
        if not reply.get("synced") or "error" in reply:
            return self._value(reply, call=True)
        try:
            pairs = self._argument_pairs(reply.get("value"), args, kwargs)
            targets = targets_for(reply["value"], pairs)
        except (ValueError, TypeError, KeyError, IndexError) as err:
            self.dead = SessionEnded("Garbled", f"arguments sent back malformed ({err})"[:300])
            raise self.dead from None
        made = self._value(reply, targets)
        if not (type(made) is list and len(made) == 3):
            self.dead = SessionEnded("Garbled", "a call's reply with its arguments is not [result, args, kwargs]")
            raise self.dead
        return made[0]

    @staticmethod
    def _argument_pairs(graph, args: tuple, kwargs: dict) -> list:
        """(value in the reply, the test's own object) for each argument: the reply is [result, args, kwargs]."""
        nodes = graph["nodes"]
        top = nodes[graph["root"][1]][1]
        sent_args, sent_kwargs = nodes[top[1][1]][1], nodes[top[2][1]][1]
        pairs = list(zip(sent_args, args, strict=False))  # a forged reply may send fewer
        for key, value in sent_kwargs:
            if key[0] == "str" and key[1] in kwargs:
                pairs.append((value, kwargs[key[1]]))
        return pairs

    def next(self, target: list, count: int) -> tuple[list, BaseException | None]:
        reply = self._exchange({"op": "next", "target": target, "n": count})
        items = self._value(reply)
        end = reply.get("end")
        if type(items) is not list:
            raise SessionEnded("Garbled", "an iterator's items are not a list")
        stop = StopIteration() if end == "stop" else rebuild(end) if isinstance(end, dict) else None
        return items, stop

    def same(self, a: Remote, b: Remote) -> bool:
        """Structural equality of two candidate objects, decided here (remote.py's docstring)."""
        if a is b or a._ref == b._ref:
            return True
        if a._class != b._class:
            return False
        key = (id(a), id(b))
        if key in self.comparing:  # objects that hold each other: equal unless something else differs
            return True
        self.comparing.add(key)
        try:
            left, right = self.ask("state", target=a._ref), self.ask("state", target=b._ref)
            if not (type(left) is list and type(right) is list and len(left) == len(right) == 2):
                raise SessionEnded("Garbled", "an object's state is not [class, attributes]")
            return left[1] is not None and right[1] is not None and left[0] == right[0] and left[1] == right[1]
        finally:
            self.comparing.discard(key)

    # ---- callbacks ----------------------------------------------------------------------------------------
    def _callback(self, message: dict) -> None:
        number = message.get("cb")
        try:
            if not (type(number) is int and 0 <= number < len(self.callbacks)):
                raise SessionEnded("Garbled", "a callback the test never passed")
            try:
                args, kwargs = decode(message.get("args"), self)
            except ValueError as err:
                raise SessionEnded("Garbled", str(err)[:300]) from None
            if not (type(args) is list and type(kwargs) is dict and all(type(k) is str for k in kwargs)):
                raise SessionEnded("Garbled", "a callback's arguments are malformed")
            reply = {"value": self.encode(self.callbacks[number](*args, **kwargs))}
        except CandidateAbort as abort:
            self.dead = abort if isinstance(abort, SessionEnded) else self.dead
            raise
        except Exception as err:  # noqa: BLE001 - the test's own callable raised: the candidate's call sees it
            bases = [c.__name__ for c in type(err).__mro__ if getattr(builtins, c.__name__, None) is c]
            reply = {"raise": {"error": kind_of(err), "bases": bases, "detail": str(err)[:1000]}}
        self.session.send(reply)

    # ---- Hooks: the candidate's values, built here --------------------------------------------------------
    def inline(self, data: list):
        if data[0] == "cb" and len(data) == 3 and type(data[1]) is int and 0 <= data[1] < len(self.callbacks):
            return self.callbacks[data[1]]  # a callable of the test's, sent back (an argument, refilled)
        if data[0] == "builtin" and len(data) == 2 and data[1] in SAFE_BUILTINS:
            return getattr(builtins, data[1])
        if data[0] != "ref" or len(data) != 5 or type(data[1]) is not int or type(data[4]) is not int:
            raise ValueError(f"unknown tag {data[0]!r}")
        remote = self.remotes.get(data[1])
        if remote is None:
            shape, name = data[2], data[3]
            if shape not in ("iterator", "callable", "object") or type(name) is not str:
                raise ValueError("malformed handle")
            remote = self.remotes[data[1]] = Remote(self, ["ref", data[1]], shape, name[:80], data[4])
        return remote

    def new_object(self, name: str, handle):
        cls = self.classes.get(name)
        if cls is None:
            raise ValueError(f"an object of a class the test does not define ({name!r})")
        made: object = object.__new__(cls)
        if not isinstance(getattr(made, "__dict__", None), dict):
            raise ValueError(f"{name} objects hold no attribute dict")
        return made

    def named(self, name: str, fields: list[str]):
        self.named_types.add((name, tuple(fields)))
        if len(self.named_types) > MAX_NAMED:  # each new one is a class to build here: a bound on that work
            raise ValueError(f"more than {MAX_NAMED} namedtuple types in one session")
        return _namedtuple(name, tuple(fields))

    # ---- the test's values, sent ----------------------------------------------------------------------------
    def other(self, value, encoder: Encoder):
        kind = type(value)
        if isinstance(value, Remote):
            return value._ref
        fields = getattr(kind, "_fields", None) if isinstance(value, tuple) else None
        if type(fields) is tuple and all(type(f) is str for f in fields):
            return encoder.named(value, fields)
        if self.classes.get(kind.__name__) is kind and isinstance(getattr(value, "__dict__", None), dict):
            return encoder.instance(value)
        if id(value) in BUILTINS and getattr(builtins, BUILTINS[id(value)]) is value:
            return ["builtin", BUILTINS[id(value)]]
        if callable(value):
            number = self.callback_of.get(id(value))
            if number is None:
                number = self.callback_of[id(value)] = len(self.callbacks)
                self.callbacks.append(value)
            return ["cb", number, str(getattr(value, "__name__", "callback"))[:80]]
        raise Unencodable(f"a {kind.__name__}, which cannot cross to the candidate")
