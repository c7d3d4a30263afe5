"""The checker's stand-ins for what lives in the candidate's process: objects (`Remote`), and the candidate's
exceptions, rebuilt as the built-in class they derive from.

A `Remote` is trusted code: every operation a test performs on it is one request to the candidate's process
(rlx.rewards.code.client), and what comes back is data. Python's own protocol decides everything the candidate
could lie about:

- `==` compares *structure* in the checker (the same object, or objects of the same class whose attributes are
  equal, as a dataclass compares), never by the candidate's `__eq__`; against a value of the checker's it is
  False, as Python's default `object.__eq__`. `hash` is the class's, so a set of candidate objects behaves.
- `x in remote` iterates the remote and compares each item here: the candidate's `__contains__` never sees
  the test's value.
- iteration (`list(generator)`, `next(g)`) fetches items in growing batches (1, 2, 4, ... 256) while the test
  keeps iterating; an exception the iterator raised comes after the items before it.
- attributes, calls, items, `len`, truth, `str` and `repr` ask the candidate: they are its values, as in one
  program.

Candidate exceptions: `rebuild` makes the class the test catches (`except ValueError`, `assertRaises`) from the
built-in classes the exception derives from, named as the candidate's (a `json.JSONDecodeError` is a
`ValueError` named JSONDecodeError). A session that ended (timeout, exit, a broken reply) and the candidate's
SystemExit are `CandidateAbort`, a BaseException: a test's `except Exception` cannot turn a hang into a pass.
"""

from __future__ import annotations

import builtins
import collections
import functools
from typing import Any

EXCEPTIONS = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}
EXITS = (SystemExit, KeyboardInterrupt, GeneratorExit)
BATCH = 256


class CandidateAbort(BaseException):
    """What the candidate did that no test may catch as an ordinary exception."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail = kind, detail


class SessionEnded(CandidateAbort):
    """The candidate's process is gone, timed out or broke the protocol: every later request raises it too."""


class CandidateRaised:
    """Mixed into every rebuilt exception class: `kind` is the candidate's own type name."""

    kind = "?"


class ArgumentNotPlain(TypeError):
    """The test passes a value that cannot reach the candidate (an open file, a module of the checker's)."""


@functools.lru_cache(maxsize=512)
def _exception_class(name: str, base: Any) -> Any:
    return type(name, (base, CandidateRaised), {"__module__": "candidate", "kind": name})


def rebuild(reply: dict, call: bool = False) -> BaseException:
    """The exception the candidate's reply describes ({"error", "bases", "detail"}), for the test to see. Out of
    a `call`, StopIteration is a RuntimeError, as PEP 479 makes it out of a generator: a function that raised it
    would otherwise end the test's `map` early, and `all(map(candidate, xs))` would pass."""
    name = str(reply.get("error", "?"))[:80]
    detail = str(reply.get("detail", ""))[:1000]
    if reply.get("unencodable"):
        return CandidateAbort("Unencodable", detail)
    bases = reply["bases"] if isinstance(reply.get("bases"), list) else []
    base: type[BaseException] = next((EXCEPTIONS[b] for b in bases if type(b) is str and b in EXCEPTIONS), Exception)
    if issubclass(base, EXITS) or not issubclass(base, Exception):
        return CandidateAbort(name, detail)
    if call and issubclass(base, StopIteration | StopAsyncIteration):
        base, detail = RuntimeError, f"a call raised {name}: {detail}"
    cls = _exception_class(name if name.isidentifier() else "CandidateError", base)  # type: ignore[arg-type]
    try:
        return cls(detail)
    except Exception:  # noqa: BLE001 - a class whose constructor wants more (UnicodeDecodeError): args only
        made = cls.__new__(cls)
        made.args = (detail,)
        return made


def kind_of(error: BaseException) -> str:
    """The name a failure record gives `error`: the candidate's type name for its own exceptions."""
    if isinstance(error, CandidateAbort):
        return error.kind
    return error.kind if isinstance(error, CandidateRaised) else type(error).__name__


class Remote:
    """A candidate object, held by handle (`ref`: ["ref", h] or ["g", name] for a global of its program)."""

    __slots__ = ("_client", "_ref", "_shape", "_type", "_class", "_buffer", "_batch", "__weakref__")

    def __init__(self, client, ref: list, shape: str = "object", type_name: str = "?", cls: int = -1) -> None:
        for name, value in zip(
            self.__slots__[:7], (client, ref, shape, type_name, cls, collections.deque(), 1), strict=True
        ):
            object.__setattr__(self, name, value)

    def _ask(self, op: str, **fields):
        object.__setattr__(self, "_batch", 1)
        return self._client.ask(op, target=self._ref, **fields)

    def __getattr__(self, name: str):
        if name.startswith("_rlx") or name in Remote.__slots__:
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name: str, value) -> None:
        self._ask("setattr", name=name, value=self._client.encode(value))

    def __call__(self, *args, **kwargs):
        return self._client.call(self._ref, args, kwargs)

    def __getitem__(self, key):
        return self._ask("getitem", key=self._client.encode(key))

    def __setitem__(self, key, value) -> None:
        self._ask("setitem", key=self._client.encode(key), value=self._client.encode(value))

    def __len__(self) -> int:
        size = self._ask("len")
        if type(size) is not int or size < 0:
            raise TypeError("the candidate's __len__ gave no length")
        return size

    def __bool__(self) -> bool:
        truth = self._ask("truth")
        if type(truth) is not bool:
            raise TypeError("the candidate's __bool__ gave no bool")
        return truth

    def __iter__(self):
        if self._shape == "iterator":
            return self
        made = self._ask("iter")
        return made if isinstance(made, Remote) else iter(made)

    def __next__(self):
        buffer = self._buffer
        if not buffer:
            batch = self._batch
            items, end = self._client.next(self._ref, batch)
            buffer.extend(items)
            if end is not None:
                buffer.append(end)
            object.__setattr__(self, "_batch", min(2 * batch, BATCH))
        item = buffer.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

    def __contains__(self, value) -> bool:
        return any(item is value or item == value for item in self)

    def __eq__(self, other):
        if not isinstance(other, Remote):
            return NotImplemented
        return self._client.same(self, other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(("rlx.remote", self._class if self._class >= 0 else self._ref[1]))

    def __repr__(self) -> str:
        return self._text("repr")

    def __str__(self) -> str:
        return self._text("str")

    def _text(self, op: str) -> str:
        text = self._ask(op)
        if type(text) is not str:
            raise TypeError(f"the candidate's __{op}__ gave no text")
        return text

    def __format__(self, spec: str) -> str:
        if spec:
            raise TypeError(f"unsupported format string passed to {self._type}.__format__")
        return str(self)

    def __instancecheck__(self, instance) -> bool:
        if not isinstance(instance, Remote):
            return False
        verdict = self._client.ask("isinstance", target=instance._ref, cls=self._ref)
        return verdict is True

    def __reduce_ex__(self, protocol):
        raise TypeError(f"a {self._type} of the candidate's cannot be copied or pickled in the checker")


def label(value) -> str:
    """What a failure record shows of `value` (the candidate's text for its objects; never raises)."""
    try:
        text = repr(value)
    except (Exception, CandidateAbort):  # noqa: BLE001 - a dead session or a hostile repr: a placeholder
        text = f"<{value._type if isinstance(value, Remote) else type(value).__name__} object>"
    return text if len(text) <= 200 else text[:200] + "..."
