"""Turning a sandbox run's raw facts into a status, shared by the unit-test and kernel rewards.

Order matters and is deliberate: the sandbox breaking (INFRA) is checked first and is never a score; then
an explicit violation (the audit tripwire, an output/file-size cap) beats everything else, because a
candidate that tried to cheat earns nothing even if some tests happened to pass; then resource deaths.
"""

from __future__ import annotations

import signal

from rlx.rewards.base import Status
from rlx.rewards.sandbox.records import RunResult, events

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}


def run_status(result: RunResult) -> tuple[Status | None, str]:
    """The status a run earns before its records are compared (None: it ran cleanly enough to compare)."""
    if result.infra is not None:
        return Status.INFRA, result.infra
    marks = events(result.records)
    violations = [e for e in marks if e.kind == "violation"]
    if violations:
        return Status.VIOLATION, f"blocked {violations[0].what}"
    if result.overflow:
        return Status.VIOLATION, "result channel over its size cap"
    if result.signal == signal.SIGXFSZ:
        return Status.VIOLATION, "file-size/output limit exceeded"
    if any(e.kind == "oom" for e in marks):
        return Status.OOM, "MemoryError under the memory limit"
    out_of_cpu = result.signal == signal.SIGKILL and result.cpu_s >= result.cpu_limit_s - 0.05
    if result.timed_out or result.signal == signal.SIGXCPU or out_of_cpu:
        return Status.TIMEOUT, f"wall {result.wall_s} s, cpu {result.cpu_s} s"
    if result.signal == signal.SIGKILL:
        return Status.OOM, "killed by SIGKILL (the kernel's OOM killer) outside the wall clock"
    if result.signal in CRASH_SIGNALS:
        return Status.CRASH, f"killed by {signal.Signals(result.signal).name}"
    load_errors = [e for e in marks if e.kind == "load_error"]
    if load_errors:
        error = load_errors[0].error
        return (Status.FORMAT if error == "SyntaxError" else Status.CRASH), f"loading the code raised {error}"
    return None, ""
