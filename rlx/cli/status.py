"""What a run is doing now (its phase), and a status.json that says `stopped` when a signal ends it.

The sweep-report callback (rlx.report.callback) writes `<run_dir>/status.json` as `running` when a job starts and
`completed` / `failed` when Hydra's job runner returns; a signal ends the process past that runner (a SystemExit
is not a failed job), so the job's own code writes `stopped` here, with the phase it was in. How a signal
stops each phase is rlx.cli.stop's: outside the RL loop (whose checkpoint callback acts at a step boundary)
it raises `Stopped`, which unwinds the phase's `finally` clauses (the warm start then discards its half-built
model); every phase change is also a point where a recorded signal is acted on. After a `Stopped` the process
exits at once (`exit_now`): the interpreter's own teardown with torch and transformers loaded took 19 s on a
busy 2-core machine, past the 10 s a cluster gives between SIGTERM and SIGKILL. Standard library only.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

from rlx.cli import stop
from rlx.cli.files import write_json

STATUS_FILE = "status.json"  # the file rlx.report.callback writes (rlx.report.runs.STATUS_FILE)
WARM_START = "warm start"  # the phase that builds a warm start (rlx.models.tiny); sweep budgets split it out
_phase = "starting"
_phase_cpu: dict[str, float] = {}  # CPU seconds spent in each phase since the job started (cpu_by_phase)
_phase_since = time.process_time()


def enter(phase: str) -> None:
    """Name the phase the run is now in (`warm start`, `evaluation before RL`, `RL`, ...); a signal recorded
    and not yet acted on stops the run here (rlx.cli.stop)."""
    global _phase, _phase_since
    stop.check()
    now = time.process_time()
    _phase_cpu[_phase] = _phase_cpu.get(_phase, 0.0) + now - _phase_since
    _phase, _phase_since = phase, now


def start_job() -> None:
    """A new job in this process (a sweep's worker runs several): its phases' CPU seconds start from zero."""
    global _phase, _phase_since
    _phase_cpu.clear()
    _phase, _phase_since = "starting", time.process_time()


def cpu_by_phase() -> dict[str, float]:
    """{phase: this process's CPU seconds in it (every thread)} since `start_job`, the current phase included:
    what a sweep's budget needs to tell a cached warm start's cost from the runs' own."""
    out = dict(_phase_cpu)
    out[_phase] = out.get(_phase, 0.0) + time.process_time() - _phase_since
    return {name: round(seconds, 1) for name, seconds in out.items()}


def phase() -> str:
    return _phase


def write_stopped(run_dir: str | Path, code: int | str | None, step: int | None = None) -> None:
    """`{"status": "stopped", "phase": ..., "signal": "SIGTERM", "ended": ...}` (atomically, as the callback does)."""
    doc: dict = {"status": "stopped", "phase": _phase, "ended": time.strftime("%Y-%m-%d %H:%M:%S")}
    if isinstance(code, int) and code > 128:
        try:
            doc["signal"] = signal.Signals(code - 128).name
        except ValueError:
            doc["exit_status"] = code
    if step is not None:
        doc["step"] = step
    write_json(Path(run_dir) / STATUS_FILE, doc)


def exit_now(code: int | str | None) -> None:
    """Flush the logs and the console, then end the process without the interpreter's teardown (its module
    cleanup is what takes seconds). Only after a `Stopped` has unwound the run's own cleanup; a W&B run still
    open (SIGINT during RL) is left to the normal exit, which finishes it."""
    if "wandb" in sys.modules:
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 1)
