"""One sandboxed run: the fork tree below the sandbox server, and the raw facts it reports.

    server ──fork──▶ C (root, supervisor) ──unshare NEWNS|NEWNET|NEWPID, tmpfs mounts──
                       └─fork─▶ G (PID 1 of the new namespace, root, only reaps)
                                  └─fork─▶ H (the candidate: rlimits, own uid, cwd = fresh tmp dir)

Why three levels: C must stay outside the new PID namespace to enforce the wall clock (it kills G, and
the kernel then kills every process left in the namespace, detached grandchildren included). G exists
because PID 1 ignores default-action signals such as SIGXCPU, so the candidate must not be PID 1.
The harness inside H hands its records to a `recorder`, which writes them to a pipe that C reads (capped)
as one final block stamped with a nonce C drew for this run, once the harness returned (no candidate code is
left to call); C keeps only that block as the records (rlx.rewards.sandbox.records explains why a forged
line cannot pass for it). C never runs candidate code and decides nothing: it reports exit status, timing
and records (a RunResult), and the trusted reward, in the trainer process, turns them into a verdict.
Exit code 0 means nothing.
"""

from __future__ import annotations

import json
import os
import secrets
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
from rlx.rewards.sandbox.records import RunResult, final_block

WORK_DIR = "/tmp/work"
STDIO_DIR = "/tmp/.stdio"  # root-only: the candidate cannot reach its own output file by path
OUTPUT_TAIL = 2000


Emit = Callable[[dict], None]


def recorder(fd: int, nonce: str) -> tuple[Emit, Emit, Callable[[], None]]:
    """The harness's side of the record pipe, as three closures. `emit` keeps a record (encoded now, while
    candidate code may still run: a hostile dict subclass runs its methods here, not in `seal`); `alarm` also
    writes it at once as a stray line (the tripwire's mark survives a crash that loses the block); `seal`
    writes the one final block.

    Candidate code shares this process but reaches none of them: they live only in the runner's and the
    harness's frames and the tripwire's closure, which the guard (rlx.rewards.sandbox.guard) keeps out of
    reach, and they look nothing up at call time that candidate code could have patched (os.write is bound
    here; no class, whose methods could be replaced), so neither the kept lines nor the nonce that tells the
    block from a forgery are handed to candidate code."""
    lines: list[str] = []
    write, dumps = os.write, json.dumps

    def put(data: bytes) -> None:
        while data:
            data = data[write(fd, data) :]

    def emit(record: dict) -> None:
        lines.append(dumps(record))

    def alarm(record: dict) -> None:
        line = dumps(record)
        lines.append(line)
        put((line + "\n").encode())

    def seal() -> None:
        put(('{"final": "' + nonce + '", "records": [' + ", ".join(lines) + "]}\n").encode())

    return emit, alarm, seal


Harness = Callable[[dict, Emit, Emit], None]


def _candidate(
    harness: Harness, payload: dict, limits: Limits, uid: int, env: dict, record_fd: int, nonce: str
) -> None:
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
        emit, alarm, seal = recorder(record_fd, nonce)
        harness(payload, emit, alarm)
        seal()  # after the harness returned: no candidate call is left in this process's program
    finally:
        os._exit(0)


def _init(harness: Harness, payload: dict, limits: Limits, uid: int, env: dict, record_fd: int, nonce: str) -> None:
    """G: PID 1 of the namespace; reaps orphans until the candidate exits, then exits with its status."""
    status = 255 << 8
    try:
        die_with_parent(0)  # the supervisor is outside this PID namespace: seen from here its pid is 0
        child = os.fork()
        if child == 0:
            _candidate(harness, payload, limits, uid, env, record_fd, nonce)
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
        except (ValueError, RecursionError, MemoryError):  # a line nested too deep is a bad record, not INFRA
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    return records, bad


def _supervise(init_pid: int, record_fd: int, limits: Limits, start: float, nonce: str) -> RunResult:
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
    lines, bad = _read_records(bytes(raw[:cap]))
    records, stray = final_block(lines, nonce)
    code = os.waitstatus_to_exitcode(status)
    return RunResult(
        infra=None,
        records=records or (),
        sealed=records is not None,
        stray=stray,
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
        nonce = secrets.token_hex(16)
        init_pid = os.fork()
        if init_pid == 0:
            os.close(record_r)
            _init(harness, payload, limits, uid, env, record_w, nonce)
        os.close(record_w)
        result = _supervise(init_pid, record_r, limits, start, nonce)
    except BaseException as err:  # noqa: BLE001 - any failure here is the sandbox's, reported as INFRA
        result = RunResult.broken(f"{type(err).__name__}: {err}", wall_s=round(time.monotonic() - start, 4))
    try:
        data = json.dumps(result.to_json()).encode()
        while data:
            data = data[os.write(result_fd, data) :]
        os.close(result_fd)  # EOF now: the server need not wait for this process's namespace teardown
    finally:
        os._exit(0)
