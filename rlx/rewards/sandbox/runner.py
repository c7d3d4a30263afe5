"""One sandboxed run: the fork tree below the sandbox server, and the raw facts it reports.

    server ──fork──▶ C (root, supervisor) ──unshare NEWNS|NEWNET|NEWPID, tmpfs mounts──
                       └─fork─▶ G (PID 1 of the new namespace, root, only reaps)
                                  └─fork─▶ H (the candidate: rlimits, own uid, cwd = fresh tmp dir)

Why three levels: C must stay outside the new PID namespace to enforce the wall clock (it kills G, and
the kernel then kills every process left in the namespace, detached grandchildren included). G exists
because PID 1 ignores default-action signals such as SIGXCPU, so the candidate must not be PID 1.
The harness inside H writes JSON-line records to a pipe that C reads (capped); C never runs candidate
code and decides nothing: it reports exit status, timing and records (a RunResult,
rlx.rewards.sandbox.records), and the trusted reward, in the trainer process, turns them into a verdict.
Exit code 0 means nothing.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable

from rlx.rewards.sandbox.isolation import (
    Limits,
    apply_limits,
    die_with_parent,
    drop_privileges,
    private_filesystem,
    unshare_namespaces,
)
from rlx.rewards.sandbox.records import RunResult

Harness = Callable[[dict, Callable[[dict], None]], None]
WORK_DIR = "/tmp/work"
STDIO_DIR = "/tmp/.stdio"  # root-only: the candidate cannot reach its own output file by path
OUTPUT_TAIL = 2000


def record_writer(fd: int) -> Callable[[dict], None]:
    """JSON-line writer on the record pipe; writes loop over partial writes so records never interleave."""

    def emit(record: dict) -> None:
        data = (json.dumps(record) + "\n").encode()
        while data:
            data = data[os.write(fd, data) :]

    return emit


def _candidate(harness: Harness, payload: dict, limits: Limits, uid: int, env: dict, record_fd: int) -> None:
    """H: becomes the unprivileged, limited candidate process and runs the harness; never returns."""
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(f"{STDIO_DIR}/out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, record_fd)
        os.closerange(record_fd + 1, 4096)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # CPython ignores it; an oversized write must kill
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        apply_limits(limits)
        drop_privileges(uid)
        os.chdir(WORK_DIR)
        os.environ.clear()
        os.environ.update({"HOME": WORK_DIR, "TMPDIR": WORK_DIR, "PATH": "/usr/bin:/bin", **env})
        harness(payload, record_writer(record_fd))
    finally:
        os._exit(0)


def _init(harness: Harness, payload: dict, limits: Limits, uid: int, env: dict, record_fd: int) -> None:
    """G: PID 1 of the namespace; reaps orphans until the candidate exits, then exits with its status."""
    status = 255 << 8
    try:
        die_with_parent(0)  # the supervisor is outside this PID namespace: seen from here its pid is 0
        child = os.fork()
        if child == 0:
            _candidate(harness, payload, limits, uid, env, record_fd)
        os.close(record_fd)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                break
    finally:
        code = os.waitstatus_to_exitcode(status)
        os._exit(128 - code if code < 0 else min(code, 127))


def _read_records(raw: bytes) -> tuple[list[dict], int]:
    records, bad = [], 0
    for line in raw.split(b"\n"):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    return records, bad


def _supervise(init_pid: int, record_fd: int, limits: Limits, start: float) -> RunResult:
    """C's loop: collect records under the cap until G exits or the wall clock runs out."""
    cap = limits.record_cap_kb * 1024
    raw, timed_out, overflow = bytearray(), False, False
    pidfd = os.pidfd_open(init_pid)
    poller = select.poll()
    poller.register(record_fd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    reading, exited = True, False
    while not exited:
        remaining = start + limits.wall_s - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for fd, _ in poller.poll(remaining * 1000):
            if fd == pidfd:
                exited = True
            elif reading:
                chunk = os.read(record_fd, 65536)
                if not chunk:
                    poller.unregister(record_fd)
                    reading = False
                raw += chunk
                if len(raw) > cap:
                    overflow = True
                    exited = True
    if timed_out or overflow:
        os.kill(init_pid, signal.SIGKILL)  # PID 1 dies: the kernel kills the whole namespace
    _, status, usage = os.wait4(init_pid, 0)
    os.set_blocking(record_fd, False)
    while reading and len(raw) <= cap:  # writers are dead now; drain what is buffered
        try:
            chunk = os.read(record_fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        raw += chunk
    records, bad = _read_records(bytes(raw[:cap]))
    code = os.waitstatus_to_exitcode(status)
    return RunResult(
        infra=None,
        records=tuple(records),
        bad_records=bad,
        exit_code=code if 0 <= code < 128 else None,
        signal=code - 128 if code >= 128 else (-code if code < 0 else None),
        timed_out=timed_out,
        overflow=overflow,
        wall_s=round(time.monotonic() - start, 4),
        cpu_s=round(usage.ru_utime + usage.ru_stime, 4),
        max_rss_mb=round(usage.ru_maxrss / 1024, 1),
        cpu_limit_s=limits.cpu_s,
        output_tail=_output_tail(),
    )


def _output_tail() -> str:
    try:
        with open(f"{STDIO_DIR}/out", "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - OUTPUT_TAIL))
            return handle.read(OUTPUT_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""


def supervisor(
    harness: Harness, payload: dict, limits: Limits, uid: int, env: dict, hide: tuple[str, ...], result_fd: int
) -> None:
    """C: isolate, start G, supervise, write the result (pickle-free JSON) to `result_fd`; never returns."""
    start, server = time.monotonic(), os.getppid()
    try:
        die_with_parent(server)
        os.setsid()
        unshare_namespaces()
        private_filesystem(limits.disk_mb, hide)
        os.mkdir(STDIO_DIR, 0o700)
        os.mkdir(WORK_DIR, 0o700)
        os.chown(WORK_DIR, uid, uid)
        record_r, record_w = os.pipe()
        init_pid = os.fork()
        if init_pid == 0:
            os.close(record_r)
            _init(harness, payload, limits, uid, env, record_w)
        os.close(record_w)
        result = _supervise(init_pid, record_r, limits, start)
    except BaseException as err:  # noqa: BLE001 - any failure here is the sandbox's, reported as INFRA
        result = RunResult.broken(f"{type(err).__name__}: {err}", wall_s=round(time.monotonic() - start, 4))
    try:
        data = json.dumps(result.to_json()).encode()
        while data:
            data = data[os.write(result_fd, data) :]
        os.close(result_fd)  # EOF now: the server need not wait for this process's namespace teardown
    finally:
        os._exit(0)
