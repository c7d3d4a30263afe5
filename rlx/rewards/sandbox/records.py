"""The records a harness writes from inside the sandbox, typed: the one place that says which fields each has.

A harness runs in the candidate's process and writes one JSON object per line to the record pipe
(rlx.rewards.sandbox.runner); the trainer reads them back in the sandbox result's `records`. Producers build
these dataclasses and emit `to_json()`; consumers read a received dict with `parse()`, which returns None for
anything without the record's shape: the candidate can write to the pipe too, so a record may be forged or
broken, and such a record is ignored, never an exception in the trainer (a forged one still has to carry the
right value to count: the expected values never enter the sandbox).

Wire format: an event is `{"event": kind, ...}`, a test outcome `{"test": index, ...}`; a harness may add
fields of its own to an event (the kernel harness's `ms`), which these types do not read.
"""

from __future__ import annotations

from dataclasses import dataclass


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Event:
    """A harness's mark. kind: `loaded` (the candidate's code ran), `done` (every test was evaluated), `oom`
    (a MemoryError), `load_error` (running the code raised `error`, an exception type name), `violation` (the
    audit tripwire blocked `what`, an audit event name, with `detail` its arguments, cut)."""

    kind: str
    error: str | None = None
    what: str | None = None
    detail: str | None = None

    def to_json(self) -> dict:
        fields = {"error": self.error, "what": self.what, "detail": self.detail}
        return {"event": self.kind, **{k: v for k, v in fields.items() if v is not None}}

    @classmethod
    def parse(cls, record: dict) -> Event | None:
        kind = record.get("event")
        if not isinstance(kind, str):
            return None
        return cls(kind, _text(record.get("error")), _text(record.get("what")), _text(record.get("detail")))


@dataclass(frozen=True)
class CallOutcome:
    """One test call of the unit-test harness: `value`, the exact-type encoding of what the call returned
    (rlx.rewards.sandbox.values; never None, None itself encodes as ["none"]), or `error`, the type name of
    what it raised (`detail`: why a value could not be encoded)."""

    test: int
    value: object = None
    error: str | None = None
    detail: str | None = None

    def to_json(self) -> dict:
        if self.error is not None:
            out: dict = {"test": self.test, "error": self.error}
            return out if self.detail is None else {**out, "detail": self.detail}
        return {"test": self.test, "value": self.value}

    @classmethod
    def parse(cls, record: dict) -> CallOutcome | None:
        test = record.get("test")
        if type(test) is not int:
            return None
        return cls(test, record.get("value"), _text(record.get("error")), _text(record.get("detail")))


def events(records: list[dict]) -> list[Event]:
    """The well-formed events among `records`, in order."""
    return [e for e in map(Event.parse, records) if e is not None]
