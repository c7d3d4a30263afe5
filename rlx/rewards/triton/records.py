"""What the two kernel runs report, typed; `parse` reads a received dict and returns None for anything without
the record's shape (never an exception in the trainer, whatever the candidate wrote).

ReferenceTrial (the reference run: only the task file runs there): the trial's inputs, drawn in that process
from seeds the candidate's process never sees, and the reference's output. CandidateTrial: what the
candidate's forward returned on those inputs, sent to it as bytes, plus the harness's in-process facts
(launches and the kernels launched, refused torch operations and launches, whether a launched kernel was given
the output's storage, canaries, inputs unchanged, and `violation`: an output that is not a plain tensor, or a
torch mode left active). Tensors cross as rlx.rewards.triton.tensors encodings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _is_tensor(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("dtype"), str)
        and isinstance(value.get("shape"), list)
        and all(type(v) is int for v in value["shape"])
        and isinstance(value.get("data"), str)
    )


def _is_input(value: object) -> bool:
    """A trial input: {"tensor": encoding} or {"value": int | float | bool}."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    if "tensor" in value:
        return _is_tensor(value["tensor"])
    return type(value.get("value")) in (int, float, bool)


@dataclass(frozen=True)
class ReferenceTrial:
    trial: int
    inputs: tuple[dict, ...]
    output: dict | None = None
    error: str | None = None

    def to_json(self) -> dict:
        out = {"trial": self.trial, "inputs": list(self.inputs)}
        out = out if self.output is None else {**out, "output": self.output}
        return out if self.error is None else {**out, "error": self.error}

    @classmethod
    def parse(cls, record: dict) -> ReferenceTrial | None:
        trial, inputs, output = record.get("trial"), record.get("inputs"), record.get("output")
        if type(trial) is not int or not isinstance(inputs, list) or not all(map(_is_input, inputs)):
            return None
        if not (output is None or _is_tensor(output)):
            return None
        return cls(trial, tuple(inputs), output, _text(record.get("error")))


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the @triton.jit function's name, the integer keyword arguments ({"B": 128}) and the
    first line of its code (its first decorator's: the checker's key for the program's kernel defs)."""

    kernel: str
    ints: dict
    line: int = 0


def _is_key(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and type(value[1]) is int


@dataclass(frozen=True)
class CandidateTrial:
    trial: int
    output: dict | None = None
    error: str | None = None
    violation: str | None = None
    launch_count: int = 0
    launches: tuple[Launch, ...] = ()  # the first 8
    kernels: tuple[tuple[str, int], ...] = ()  # every kernel launched, as (name, first line)
    refused: tuple[str, ...] = ()
    canaries_ok: bool = False
    inputs_unchanged: bool = False
    output_from_kernel: bool = False

    def to_json(self) -> dict:
        out: dict = {"trial": self.trial}
        for key in ("output", "error", "violation"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return {
            **out,
            "launch_count": self.launch_count,
            "launches": [{"kernel": x.kernel, "ints": x.ints, "line": x.line} for x in self.launches],
            "kernels": [list(key) for key in self.kernels],
            "refused": list(self.refused),
            "canaries_ok": self.canaries_ok,
            "inputs_unchanged": self.inputs_unchanged,
            "output_from_kernel": self.output_from_kernel,
        }

    @classmethod
    def parse(cls, record: dict) -> CandidateTrial | None:
        """None unless every field present has its type (absent ones read as failing)."""
        trial, output = record.get("trial"), record.get("output")
        count, launches, refused = record.get("launch_count", 0), record.get("launches", []), record.get("refused", [])
        canaries_ok, unchanged = record.get("canaries_ok", False), record.get("inputs_unchanged", False)
        kernels, from_kernel = record.get("kernels", []), record.get("output_from_kernel", False)
        if (
            type(trial) is not int
            or not (output is None or _is_tensor(output))
            or type(count) is not int
            or not isinstance(launches, list)
            or not isinstance(refused, list)
            or not all(isinstance(r, str) for r in refused)
            or type(canaries_ok) is not bool
            or type(unchanged) is not bool
            or type(from_kernel) is not bool
            or not isinstance(kernels, list)
            or not all(map(_is_key, kernels))
        ):
            return None
        parsed = []
        for launch in launches:
            if not (isinstance(launch, dict) and isinstance(launch.get("kernel"), str)):
                return None
            ints, line = launch.get("ints"), launch.get("line", 0)
            if not (isinstance(ints, dict) and all(type(v) is int for v in ints.values()) and type(line) is int):
                return None
            parsed.append(Launch(launch["kernel"], ints, line))
        return cls(
            trial,
            output,
            _text(record.get("error")),
            _text(record.get("violation")),
            count,
            tuple(parsed),
            tuple((name, line) for name, line in kernels),
            tuple(refused),
            canaries_ok,
            unchanged,
            from_kernel,
        )


def first_by_trial(records, parse) -> dict:
    """The first well-formed record of each trial index (a later, or malformed, one for an index is ignored)."""
    found: dict = {}
    for record in records:
        parsed = parse(record) if isinstance(record, dict) else None
        if parsed is not None and parsed.trial not in found:
            found[parsed.trial] = parsed
    return found


@dataclass(frozen=True)
class Timing:
    """The harness's GPU timing of one forward (CUDA only): `ms`, the median milliseconds after warm-up, or
    `error`, what the forward raised while timed; refused: what the runtime account refused while timed."""

    ms: float | None = None
    error: str | None = None
    refused: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out: dict = {"event": "timing", "refused": list(self.refused)}
        out = out if self.ms is None else {**out, "ms": self.ms}
        return out if self.error is None else {**out, "error": self.error}

    @classmethod
    def parse(cls, record: object) -> Timing | None:
        """None unless `record` is a timing with a list of refused names; an `ms` that is not a finite positive
        number reads as None (no usable time)."""
        if not isinstance(record, dict) or record.get("event") != "timing":
            return None
        ms, refused = record.get("ms"), record.get("refused", [])
        if not (isinstance(refused, list) and all(isinstance(r, str) for r in refused)):
            return None
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms) or ms <= 0:
            ms = None
        return cls(None if ms is None else float(ms), _text(record.get("error")), tuple(refused))
