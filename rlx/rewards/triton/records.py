"""What the two kernel runs report, typed; `parse` reads a received dict and returns None for anything without
the record's shape (never an exception in the trainer, whatever the candidate wrote).

ReferenceTrial (the reference run: only the task file runs there): the trial's inputs, drawn in that process
from seeds the candidate's process never sees, the reference's output, and its torch.nn layer calls (whether it
computes anything outside them). CandidateTrial: what the candidate's forward returned on those inputs, sent to
it as bytes, plus the harness's in-process facts (launches and the kernels launched, refused torch operations and
launches, whether a launched kernel was given the output's storage, canaries, kernel accesses outside their
launch's tensors, inputs unchanged, the reference-layer calls it made, and `violation`: an output that is not a
plain tensor, or a torch mode left active). Tensors cross as rlx.rewards.triton.tensors encodings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


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


def _is_counts(value: object) -> bool:
    """{"torch.nn.modules.conv.Conv2d": 2, ...}: module calls by type."""
    return isinstance(value, dict) and all(isinstance(k, str) and type(v) is int for k, v in value.items())


@dataclass(frozen=True)
class ReferenceTrial:
    """`calls`: the reference forward's torch.nn layer calls by type; `outside`: whether any op that computes ran
    outside them (rlx.rewards.triton.layers.LayerCalls)."""

    trial: int
    inputs: tuple[dict, ...]
    output: dict | None = None
    error: str | None = None
    calls: dict[str, int] = field(default_factory=dict)
    outside: bool = True

    def to_json(self) -> dict:
        out = {"trial": self.trial, "inputs": list(self.inputs), "calls": self.calls, "outside": self.outside}
        out = out if self.output is None else {**out, "output": self.output}
        return out if self.error is None else {**out, "error": self.error}

    @classmethod
    def parse(cls, record: dict) -> ReferenceTrial | None:
        trial, inputs, output = record.get("trial"), record.get("inputs"), record.get("output")
        calls, outside = record.get("calls", {}), record.get("outside", True)
        if type(trial) is not int or not isinstance(inputs, list) or not all(map(_is_input, inputs)):
            return None
        if not (output is None or _is_tensor(output)) or not _is_counts(calls) or type(outside) is not bool:
            return None
        return cls(trial, tuple(inputs), output, _text(record.get("error")), dict(calls), outside)


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
    out_of_bounds: tuple[str, ...] = ()  # kernel accesses refused outside their launch's tensors
    layer_calls: dict[str, int] = field(default_factory=dict)  # reference-layer calls by type (reference_layers)

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
            "out_of_bounds": list(self.out_of_bounds),
            "layer_calls": self.layer_calls,
        }

    @classmethod
    def parse(cls, record: dict) -> CandidateTrial | None:
        """None unless every field present has its type (absent ones read as failing)."""
        trial, output = record.get("trial"), record.get("output")
        count, launches, refused = record.get("launch_count", 0), record.get("launches", []), record.get("refused", [])
        canaries_ok, unchanged = record.get("canaries_ok", False), record.get("inputs_unchanged", False)
        kernels, from_kernel = record.get("kernels", []), record.get("output_from_kernel", False)
        out_of_bounds, layer_calls = record.get("out_of_bounds", []), record.get("layer_calls", {})
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
            or not (isinstance(out_of_bounds, list) and all(isinstance(r, str) for r in out_of_bounds))
            or not _is_counts(layer_calls)
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
            tuple(out_of_bounds),
            dict(layer_calls),
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
    `error`, what the forward raised while timed; refused: what the runtime account refused while timed; outputs:
    the encoded outputs of the candidate's timed forwards that were given the reference's timing draw."""

    ms: float | None = None
    error: str | None = None
    refused: tuple[str, ...] = ()
    outputs: tuple[dict, ...] = ()

    def to_json(self) -> dict:
        out: dict = {"event": "timing", "refused": list(self.refused)}
        out = out if self.ms is None else {**out, "ms": self.ms}
        out = out if not self.outputs else {**out, "outputs": list(self.outputs)}
        return out if self.error is None else {**out, "error": self.error}

    @classmethod
    def parse(cls, record: object) -> Timing | None:
        """None unless `record` is a timing with a list of refused names and a list of outputs (dicts, checked
        when compared); an `ms` that is not a finite positive number reads as None (no usable time)."""
        if not isinstance(record, dict) or record.get("event") != "timing":
            return None
        ms, refused, outputs = record.get("ms"), record.get("refused", []), record.get("outputs", [])
        if not (isinstance(refused, list) and all(isinstance(r, str) for r in refused)):
            return None
        if not (isinstance(outputs, list) and all(isinstance(o, dict) for o in outputs)):
            return None
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms) or ms <= 0:
            ms = None
        return cls(None if ms is None else float(ms), _text(record.get("error")), tuple(refused), tuple(outputs))
