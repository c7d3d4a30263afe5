"""A run's life from outside: progress during the warm start, one writer per run directory, SIGTERM during the
warm start. One live run serves all three (the warm start is the longest phase a new user meets)."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli, start_cli

pytestmark = pytest.mark.slow
LONG_WARM_START = ["model.warm_start.steps=100000", "model.warm_start.max_attempts=1"]


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `directory`: its modification time (ns) and contents."""
    return {
        str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in directory.rglob("*")
        if p.is_file()
    }


def lines_of(proc) -> queue.Queue:
    """The process's output lines, as they come (a thread reads them: a test must not block on a quiet run)."""
    out: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            out.put(line)
        out.put(None)

    threading.Thread(target=read, daemon=True).start()
    return out


def wait_for_line(out: queue.Queue, text: str, seen: list[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = out.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        if text in line:
            return line
    raise AssertionError(f"no line with {text!r} in {timeout:.0f} s:\n{''.join(seen[-40:])}")


def test_warm_start_progress_a_second_writer_refused_and_sigterm_stops_it(tmp_path):
    run_dir, cache = tmp_path / "run", tmp_path / "cold-cache"
    proc = start_cli(["-m", "rlx", f"hydra.run.dir={run_dir}", *LONG_WARM_START], tmp_path, cache)
    out, seen = lines_of(proc), []
    try:
        # the warm start says how far it is (step, loss, ETA) every 10 s
        first = wait_for_line(out, "warm start attempt 1: step ", seen, timeout=600)  # imports: 150 s at load 18
        second = wait_for_line(out, "warm start attempt 1: step ", seen, timeout=30)
        assert "loss " in second and "eta " in second, second
        stamps = [time.strptime(line.split()[0], "%H:%M:%S") for line in (first, second)]
        gap = time.mktime(stamps[1]) - time.mktime(stamps[0])
        assert 0 < gap <= 15, (first, second)  # 10 s, plus a step's jitter on a loaded machine

        # a resume started into the live run's directory refuses at once, naming the holder, changing nothing
        before = snapshot(run_dir)
        start = time.perf_counter()
        second_writer = run_cli(["-m", "rlx", f"hydra.run.dir={run_dir}", "ckpt_path=last"], tmp_path, cache)
        refused_in = time.perf_counter() - start
        assert second_writer.returncode == 1, second_writer.stderr
        message = second_writer.stderr.strip().splitlines()
        assert len(message) == 1 and f"PID {proc.pid} on {socket.gethostname()}" in message[0], message
        after = snapshot(run_dir)
        log_before, log_after = before.pop("rlx.log")[1], after.pop("rlx.log")[1]  # the live run appends to it
        assert after == before
        assert log_after.startswith(log_before) and b"ckpt_path" not in log_after  # nothing the second one wrote
        print(f"second writer refused in {refused_in:.1f} s")

        # SIGTERM during the warm start: out within 10 s, status.json says stopped (and where), nothing cached
        proc.send_signal(signal.SIGTERM)
        start = time.perf_counter()
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert time.perf_counter() - start < 10
    finally:
        if proc.poll() is None:
            proc.kill()
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "stopped" and status["phase"] == "warm start" and status["signal"] == "SIGTERM"
    cached = [p.name for p in (cache / "tiny").iterdir() if not p.name.endswith(".lock")]
    assert cached == [], cached  # no model, no half-written .building-* copy

    # the holder is gone: its lock is free, and the next run into the directory takes it over
    second_writer = run_cli(
        ["-m", "rlx", f"hydra.run.dir={run_dir}", "ckpt_path=last", "trainer.max_steps=0"], tmp_path, cache
    )
    assert "in use by" not in second_writer.stderr and "trainer.max_steps" in second_writer.stderr
    assert os.path.exists(run_dir / ".rlx.lock")
