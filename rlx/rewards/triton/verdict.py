"""reward=triton's verdict (rlx.rewards.triton.reward describes each check): computed in the checker from the
static checks, the candidate session's replies and the reference's, never where candidate code runs. A timed
forward earns a speedup only where the outputs of its checked forwards (given the reference's timing draw,
values no trial had) match the reference's; a wrong one there is as wrong as a wrong trial.
"""

from __future__ import annotations

from rlx.rewards.base import Status, Verdict
from rlx.rewards.sandbox.session import Failure
from rlx.rewards.triton.records import CandidateTrial, ReferenceTrial, Timing, first_by_trial
from rlx.rewards.triton.static import StaticResult
from rlx.rewards.triton.tensors import compare

RUNTIME_CHECKS = (
    "launched",
    "no_fallback",
    "kernels_compute",
    "kernel_output",
    "plain_output",
    "in_bounds",
    "inputs_unchanged",
)
ZERO = {"valid": 0.0, "compiled": 0.0, "correct": 0.0, "fast_1": 0.0, "plan": 0.0}
FORMAT_ERRORS = ("SyntaxError", "IndentationError", "TabError")
Outcome = dict | Failure  # a session's replies ({"load": reply} or {"trials": [...], "timing": ...}), or its end


def reference_trials(reference: Outcome) -> dict[int, ReferenceTrial] | str:
    """The reference's trials with outputs, or why the reference run cannot be compared against."""
    if isinstance(reference, Failure):
        return f"{reference.status.value}: {reference.reason}"
    if "load" in reference:
        return f"loading the task raised {reference['load'].get('error')}"
    found = first_by_trial(reference["trials"], ReferenceTrial.parse)
    if not found or any(t.output is None for t in found.values()):
        return "its forward returned no tensor"
    return found


def _drawn(reference: Outcome) -> ReferenceTrial | None:
    """The reference's timing draw (GPU only) where it has an output."""
    record = reference.get("timed") if isinstance(reference, dict) else None
    drawn = ReferenceTrial.parse(record) if isinstance(record, dict) else None
    return drawn if drawn is not None and drawn.output is not None else None


def timing_draw(reference: Outcome) -> list[dict]:
    """The inputs of the reference's timing draw, for the candidate's checked timed forwards; []: none."""
    drawn = _drawn(reference)
    return list(drawn.inputs) if drawn is not None else []


def runs_every_layer_call(reference: ReferenceTrial, candidate: CandidateTrial) -> bool:
    """Whether the program ran, itself, every torch.nn layer call of a reference that computes nothing outside
    its layers (reward.torch_in_forward=reference_layers): then the layers made the whole answer, and a kernel at
    most copied it. A reference with any compute outside its layers leaves that to kernels, whatever the program
    keeps."""
    if reference.outside or not reference.calls or not candidate.layer_calls:
        return False
    return all(candidate.layer_calls.get(kind, 0) >= count for kind, count in reference.calls.items())


def _load_failure(reply: dict) -> tuple[Status, str]:
    if "violation" in reply:
        return Status.VIOLATION, str(reply["violation"])[:200]
    error = str(reply.get("error"))[:80]
    status = Status.FORMAT if error in FORMAT_ERRORS else Status.OOM if error == "MemoryError" else Status.CRASH
    return status, f"loading the code raised {error}"


def decide(
    checks: dict,
    outcome: Outcome,
    reference: Outcome,
    speedup_cap: float,
    speedup_weight: float,
    static: StaticResult | None = None,
) -> Verdict:
    """Verdict from the static checks, what the candidate's session answered (or how it ended) and the
    reference's (no plan: TritonReward adds it to a PASS). `static`: the program's kernels and which of them
    write memory (None: any launch counts)."""
    refused_word = static.reason if static is not None else ""
    if not (checks["parses"] and checks["defines_model_new"]):
        return Verdict(0.0, Status.FORMAT, ZERO, {"checks": checks})
    for check, why in (
        ("defines_jit_kernel", "no @triton.jit kernel"),
        ("loads_and_stores", "no kernel both loads and stores"),
        ("vocabulary", refused_word),
    ):
        if not checks.get(check, True):
            return Verdict(0.0, Status.VIOLATION, ZERO, {"checks": checks, "reason": why})
    expected = reference_trials(reference)
    if isinstance(expected, str):
        return Verdict(0.0, Status.INFRA, {}, {"checks": checks, "reason": f"reference run failed: {expected}"})
    if isinstance(outcome, Failure):
        base = {"wall_s": outcome.facts.wall_s, "output_tail": outcome.facts.output_tail}
        return Verdict(0.0, outcome.status, ZERO, {**base, "checks": checks, "reason": outcome.reason})
    if "load" in outcome:
        status, why = _load_failure(outcome["load"])
        return Verdict(0.0, status, ZERO, {"checks": checks, "reason": why})
    found = first_by_trial(outcome["trials"], CandidateTrial.parse)
    got = [found.get(t) for t in sorted(expected)]  # None: the trial left no well-formed reply
    errors = [r.error if r else None for r in got if r is None or r.error]
    if any(e is not None and e.startswith("MemoryError") for e in errors):
        return Verdict(0.0, Status.OOM, ZERO, {"checks": checks, "reason": "MemoryError in forward"})
    comparisons = [
        compare(r.output, expected[t].output or {}) if r and r.output else (False, "")
        for t, r in zip(sorted(expected), got, strict=True)
    ]
    timed_ok, timed_why = timed_outputs_match(outcome.get("timing"), reference)
    if timed_ok is False:  # a wrong output while timed: as wrong as in a trial (the timing draw is one more)
        comparisons.append((False, f"timed forward: {timed_why}"))

    def launched(r: CandidateTrial | None) -> bool:
        if r is None or r.launch_count == 0:
            return False
        return static is None or (set(r.kernels) <= static.kernels and bool(set(r.kernels) & static.writers))

    checks = {
        **checks,
        "launched": all(launched(r) for r in got),
        "no_fallback": not any(r is not None and r.refused for r in got),
        "kernels_compute": not any(
            r is not None and runs_every_layer_call(expected[t], r) for t, r in zip(sorted(expected), got, strict=True)
        ),
        "kernel_output": all(r is not None and r.output_from_kernel for r in got),
        "plain_output": not any(r is not None and r.violation for r in got),
        "in_bounds": all(r is not None and r.canaries_ok and not r.out_of_bounds for r in got),
        "inputs_unchanged": all(r is not None and r.inputs_unchanged for r in got),
        "compiled": not errors,
        "correct": all(ok for ok, _ in comparisons),
    }
    violations = [r.violation for r in got if r is not None and r.violation]
    foreign = {k for r in got if r is not None and static is not None for k in r.kernels} - (
        static.kernels if static is not None else set()
    )
    details = {
        "checks": checks,
        "refused": sorted({x for r in got if r is not None for x in r.refused})[:6],
        **(
            {"out_of_bounds": faults[:3]}
            if (faults := [x for r in got if r is not None for x in r.out_of_bounds])
            else {}
        ),
        **({"foreign_kernels": sorted(f"{n}@{line}" for n, line in foreign)[:3]} if foreign else {}),
        "errors": errors[:3],
        "mismatch": [why for ok, why in comparisons if not ok][:3],
        **({"output": violations[0]} if violations else {}),
    }
    valid = all(checks[k] for k in RUNTIME_CHECKS)
    speedup = _speedup(outcome.get("timing"), reference.get("timing") if isinstance(reference, dict) else None)
    speedup = speedup if timed_ok else None  # a time is earned only by outputs checked while timed
    details["speedup"] = speedup if speedup is not None else _no_speedup(outcome.get("timing"), timed_why)
    correct = float(checks["correct"] and checks["compiled"])
    components = {
        "valid": float(valid),
        "compiled": float(checks["compiled"]),
        "correct": correct * valid,
        "fast_1": float(bool(valid and correct and speedup is not None and speedup > 1.0)),
        "plan": 0.0,
    }
    if not checks["compiled"] and checks["no_fallback"] and checks["plain_output"] and checks["in_bounds"]:
        return Verdict(0.0, Status.CRASH, {**components, "valid": 0.0}, {**details, "reason": "forward raised"})
    if not valid:
        failed = [k for k in RUNTIME_CHECKS if not checks[k]]
        return Verdict(0.0, Status.VIOLATION, {**components, "correct": 0.0}, {**details, "reason": f"failed {failed}"})
    if not correct:
        return Verdict(0.0, Status.FAIL, components, details)
    term = speedup_weight * min(speedup, speedup_cap) if speedup is not None else 0.0
    return Verdict(1.0 + term, Status.PASS, components, details)


def timed_outputs_match(timing: object, reference: Outcome) -> tuple[bool | None, str]:
    """Whether the outputs of the candidate's timed forwards that were given the reference's timing draw (values
    no trial had) match the reference's output on it: (True, ""), (False, why), or (None, why) where nothing
    could be checked (no GPU timing, no draw, no outputs)."""
    new = Timing.parse(timing)
    if new is None or new.ms is None:
        return None, "no GPU timing: CPU/TRITON_INTERPRET" if timing is None else "the timing failed"
    drawn = _drawn(reference)
    if drawn is None or drawn.output is None:
        return None, "the reference made no timing draw"
    if not new.outputs:
        return None, "no timed output was checked"
    for output in new.outputs:
        ok, why = compare(output, drawn.output)
        if not ok:
            return False, why
    return True, ""


def _no_speedup(timing: object, why: str) -> str:
    return "unavailable (no GPU timing: CPU/TRITON_INTERPRET)" if timing is None else f"unavailable ({why})"


def _speedup(candidate: object, reference: object) -> float | None:
    """Reference ms / candidate ms from the harness's timing replies (GPU only); None where either is missing,
    broke, or the candidate made a refused torch call while it was timed."""
    new, ref = Timing.parse(candidate), Timing.parse(reference)
    if new is None or ref is None or new.refused or new.ms is None or ref.ms is None:
        return None
    return ref.ms / new.ms
