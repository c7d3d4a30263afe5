"""What a sandboxed run reports, typed: the one place that says which fields each record has.

`RunResult` is one run's raw facts (exit status, timing, the harness's records), or why the sandbox itself
broke; the supervisor (rlx.rewards.sandbox.runner) builds it, it crosses the server's pipe as JSON and the
pool hands it to the rewards, whose `decide` functions and `rlx.rewards.verdicts.run_status` read it.

A harness runs in the candidate's process and writes one JSON object per line to the record pipe
(rlx.rewards.sandbox.runner); the trainer reads them back in the sandbox result's `records`. Producers build
these dataclasses and emit `to_json()`; consumers read a received dict with `parse()`, which returns None for
anything without the record's shape: the candidate can write to the pipe too, so a record may be forged or
broken, and such a record is ignored, never an exception in the trainer (a forged one still has to carry the
right value to count: the expected values never enter the sandbox).

Wire format: an event is `{"event": kind, ...}`, a unit-test outcome `{"test": index, ...}`, a kernel trial
`{"trial": index, ...}`, the kernel harness's timing `{"event": "timing", "ms" | "error", "refused"}` (an
event too, of kind `timing`, whose own fields only `Timing` reads).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass


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


def _names(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


@dataclass(frozen=True)
class Trial:
    """One seeded forward of the kernel harness (rlx.rewards.triton.harness). output: the tensor it returned,
    encoded (rlx.rewards.triton.tensors.encode_tensor), else None with `error` saying why (what it raised, or
    what it returned instead of a tensor). launches: Triton kernel launches counted at runtime; blocks: the
    integer keyword arguments of the first 8 launches (e.g. ({"B": 128},)); refused: the torch calls the
    allow-list refused inside forward; canaries_ok: the padding around every buffer is intact;
    inputs_unchanged: the inputs equal their copies taken before the call."""

    trial: int
    output: dict | None = None
    error: str | None = None
    launches: int = 0
    blocks: tuple[dict, ...] = ()
    refused: tuple[str, ...] = ()
    canaries_ok: bool = False
    inputs_unchanged: bool = False

    def to_json(self) -> dict:
        out: dict = {} if self.output is None else {"output": self.output}
        out = out if self.error is None else {**out, "error": self.error}
        return {
            "trial": self.trial,
            **out,
            "launches": self.launches,
            "blocks": list(self.blocks),
            "refused": list(self.refused),
            "canaries_ok": self.canaries_ok,
            "inputs_unchanged": self.inputs_unchanged,
        }

    @classmethod
    def parse(cls, record: dict) -> Trial | None:
        """None unless every field present has its type (absent ones read as failing: no launches, canaries
        not confirmed)."""
        trial, output, error = record.get("trial"), record.get("output"), record.get("error")
        launches, blocks = record.get("launches", 0), record.get("blocks", [])
        refused, canaries_ok = _names(record.get("refused", [])), record.get("canaries_ok", False)
        inputs_unchanged = record.get("inputs_unchanged", False)
        if (
            type(trial) is not int
            or not (output is None or isinstance(output, dict))
            or not (error is None or isinstance(error, str))
            or type(launches) is not int
            or not (isinstance(blocks, list) and all(isinstance(b, dict) for b in blocks))
            or refused is None
            or type(canaries_ok) is not bool
            or type(inputs_unchanged) is not bool
        ):
            return None
        return cls(trial, output, error, launches, tuple(blocks), refused, canaries_ok, inputs_unchanged)


@dataclass(frozen=True)
class Timing:
    """The kernel harness's GPU timing of one forward (CUDA only): `ms`, the median milliseconds after warm-up,
    or `error`, what the forward raised while timed; refused: the torch calls the allow-list refused while
    timed (the candidate is timed under the allow-list it was checked under)."""

    ms: float | None = None
    error: str | None = None
    refused: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out: dict = {"event": "timing"}
        out = out if self.ms is None else {**out, "ms": self.ms}
        out = out if self.error is None else {**out, "error": self.error}
        return {**out, "refused": list(self.refused)}

    @classmethod
    def parse(cls, record: dict) -> Timing | None:
        """None unless `record` is a timing event with a list of refused names; an `ms` that is not a finite
        positive number reads as None (no usable time)."""
        ms, refused = record.get("ms"), _names(record.get("refused", []))
        if record.get("event") != "timing" or refused is None:
            return None
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms) or ms <= 0:
            ms = None
        return cls(None if ms is None else float(ms), _text(record.get("error")), refused)


def events(records: Iterable[dict]) -> list[Event]:
    """The well-formed events among `records`, in order."""
    return [e for e in map(Event.parse, records) if e is not None]


@dataclass(frozen=True)
class RunResult:
    """One sandboxed run, as the supervisor saw it (it decides nothing: the trusted reward does).

    infra: None for a run that happened; else why the sandbox broke (the sample is INFRA, not the candidate's
    fault), and the other fields are empty. records: the harness's records as received (read them with the
    record types above). exit_code: the candidate's status when it exited (None when a signal killed it or
    on INFRA); signal: the signal that killed it, else None. timed_out: the wall clock ran out; overflow: the
    record channel went over its cap. output_tail: the end of the candidate's stdout and stderr."""

    infra: str | None
    records: tuple[dict, ...]
    bad_records: int
    exit_code: int | None
    signal: int | None
    timed_out: bool
    overflow: bool
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    cpu_limit_s: float
    output_tail: str

    @classmethod
    def broken(cls, why: str, wall_s: float = 0.0) -> RunResult:
        """The result of a run the sandbox could not carry out (`why`), after `wall_s` seconds."""
        return cls(why, (), 0, None, None, False, False, wall_s, 0.0, 0.0, 0.0, "")

    def to_json(self) -> dict:
        return {**asdict(self), "records": list(self.records)}

    @classmethod
    def from_json(cls, data: dict) -> RunResult:
        """Raises TypeError or KeyError when `data` is not a result (the caller turns that into INFRA)."""
        return cls(**{**data, "records": tuple(data["records"])})
