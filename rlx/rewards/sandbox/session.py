"""The checker's side of the sandbox: `Sandbox.map(programs, check)` runs each program in an isolated candidate
process and hands `check` a `Session` to talk to it with plain data. /work/wt/SANDBOX_API.md and docs/sandbox.md
describe the contract; rlx.rewards.sandbox.jail and .zygote the isolation.

Trust: this process is the checker. It never runs model output; what comes back is parsed with a size cap
(`Limits.output_kb`, enforced by the zygote and again here) and a JSON parser whose failures (a reply nested
too deep: RecursionError, too large: MemoryError) end the session as a labelled CRASH, never an exception.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlx.errors import RlxError
from rlx.rewards.base import Status
from rlx.rewards.sandbox import frames
from rlx.rewards.sandbox.allowlist import jail_config

START_TIMEOUT_S = 120.0
BACKSTOP_S = 15.0  # beyond the wall limit, a zygote that has not reported is itself broken
T = TypeVar("T")
log = logging.getLogger(__name__)


class SandboxUnavailable(RlxError):
    """The jail cannot be built here; the message is one line saying what is missing and how to get it (an
    RlxError: `python -m rlx` prints it once and exits, instead of scoring anything unsandboxed)."""


@dataclass(frozen=True)
class Limits:
    """wall_s: the session's wall clock; cpu_s: RLIMIT_CPU; memory_mb: RLIMIT_DATA of the candidate, which cannot
    create processes, so it bounds the whole tree; disk_mb: each tmpfs (/tmp, /dev/shm); output_kb: bytes the
    candidate may send back in all; fsize_mb: RLIMIT_FSIZE."""

    wall_s: float
    cpu_s: int
    memory_mb: int
    disk_mb: int
    output_kb: int
    fsize_mb: int = 1


@dataclass(frozen=True)
class RunFacts:
    """How the candidate process ended, as the zygote saw it (output_tail: its own stdout/stderr's end)."""

    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    overflow: bool = False
    closed: bool = False
    started: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    cpu_limit_s: float = 0.0
    max_rss_mb: float = 0.0
    output_tail: str = ""


class Ended(Exception):
    """The candidate process is gone (or was stopped): `status` says why, as a labelled zero."""

    def __init__(self, status: Status, reason: str, facts: RunFacts | None = None) -> None:
        super().__init__(f"{status.value}: {reason}")
        self.status, self.reason, self.facts = status, reason, facts or RunFacts()


class _Broken(Exception):
    """The jail itself broke (INFRA): the worker is restarted."""


@dataclass(frozen=True)
class Failure(Generic[T]):
    """What `Sandbox.map` returns for a program whose session ended before `check` finished."""

    status: Status
    reason: str
    facts: RunFacts


def ended_status(facts: RunFacts) -> tuple[Status, str]:
    """The label of a candidate process that ended before the checker was done with it."""
    if facts.overflow:
        return Status.VIOLATION, "sent more than its output cap"
    if facts.signal == signal.SIGXFSZ:
        return Status.VIOLATION, "file-size limit exceeded"
    if facts.signal == signal.SIGSYS:
        return Status.VIOLATION, "a system call of a foreign ABI"
    out_of_cpu = facts.signal == signal.SIGKILL and facts.cpu_s >= facts.cpu_limit_s - 0.05
    if facts.timed_out or facts.signal == signal.SIGXCPU or out_of_cpu:
        return Status.TIMEOUT, f"wall {facts.wall_s} s, cpu {facts.cpu_s} s"
    if facts.signal == signal.SIGKILL:
        return Status.OOM, "killed by SIGKILL outside the time limits (out of memory)"
    if facts.signal is not None:
        return Status.CRASH, f"killed by {signal.Signals(facts.signal).name}"
    return Status.CRASH, f"exited (code {facts.exit_code}) before the checker was done"


class Session:
    """One live candidate process; valid only inside `check`."""

    def __init__(self, worker: _Worker, limits: Limits) -> None:
        self._worker, self._limits = worker, limits
        self._deadline = time.monotonic() + limits.wall_s + BACKSTOP_S
        self._ended: Ended | None = None
        self._started = False
        self.facts: RunFacts | None = None

    def request(
        self, message: dict, blobs: Sequence[bytes] = (), timeout_s: float | None = None
    ) -> tuple[dict, list[bytes]]:
        """Send one request, return the candidate's reply (untrusted plain data); raises Ended only. With
        `timeout_s`, a reply that takes longer ends the session as TIMEOUT (the candidate is stopped)."""
        if self._ended is not None:
            raise self._ended
        self._worker.send(b"M", frames.pack_message(message, blobs))
        patience = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if patience is not None and patience < self._deadline and not self._worker.ready(patience):
                self._end(Ended(Status.TIMEOUT, f"no reply within the request's {timeout_s} s"))
            kind, body = self._receive()
            if kind == b"M":
                try:
                    return frames.unpack_message(body)
                except frames.Malformed as err:
                    self._end(Ended(Status.CRASH, f"malformed reply: {err}"))
            elif kind == b"E":
                self._finish(body)

    def _end(self, ended: Ended) -> None:
        """Stop the candidate (it broke the protocol or took too long), raise `ended`."""
        self.close(wait=False)
        self._ended = ended
        raise self._ended

    def _finish(self, body: bytes) -> None:
        self.facts = _facts(body)
        status, reason = ended_status(self.facts)
        if not (self.facts.started or self._started):
            raise _Broken(f"the candidate's setup failed: {self.facts.output_tail.strip()[-300:]}")
        self._ended = Ended(status, reason, self.facts)
        raise self._ended

    def pipeline(self, messages: Sequence[dict]) -> list[dict]:
        """Send all `messages` at once, then read one reply each, in order (one round trip instead of many);
        raises Ended only, like `request`."""
        if self._ended is not None:
            raise self._ended
        for message in messages:
            self._worker.send(b"M", frames.pack_message(message))
        replies: list[dict] = []
        while len(replies) < len(messages):
            kind, body = self._receive()
            if kind == b"M":
                try:
                    replies.append(frames.unpack_message(body)[0])
                except frames.Malformed as err:
                    self._end(Ended(Status.CRASH, f"malformed reply: {err}"))
            elif kind == b"E":
                self._finish(body)
        return replies

    def _receive(self) -> tuple[bytes, bytes]:
        """The next frame that is not R (the candidate's setup is done: noted; a request sent before it waits
        in the zygote, so the first request costs no extra round trip)."""
        while True:
            kind, body = self._worker.receive(self._deadline)
            if kind != b"R":
                return kind, body
            self._started = True

    def close(self, wait: bool = True) -> None:
        """End the session (the candidate is killed); `wait=False` leaves its E frame to be read before the next
        session's first frame (`_Worker.settle`), saving a round trip when the checker is done."""
        if self.facts is not None:
            return
        self._worker.send(b"C", b"")
        self.facts = RunFacts(closed=True, started=True)
        if wait:
            self._worker.settle()
        else:
            self._worker.owes_end = True


def _facts(body: bytes) -> RunFacts:
    try:
        return RunFacts(**json.loads(body))
    except (ValueError, TypeError) as err:
        raise _Broken(f"malformed facts from the zygote ({err})") from None


class _Worker:
    """One jail: a `python -m rlx.rewards.sandbox.jail` process (restarted when it breaks)."""

    def __init__(self, config: dict, limits: Limits, index: int) -> None:
        self.config, self.limits, self.index = config, limits, index
        self.process: subprocess.Popen | None = None
        self.restarts = 0  # jails started after the first (one broke)
        self.started = False
        self.cap = limits.output_kb * 1024 + 65536
        self.owes_end = False  # a closed session's E frame is still to be read
        self.backlog: collections.deque[tuple[bytes, bytes]] = collections.deque()  # frames read while sending

    def settle(self) -> None:
        """Read up to the E frame of the session closed last (what its candidate sent after the close is dropped)."""
        deadline = time.monotonic() + self.limits.wall_s + BACKSTOP_S
        while self.receive(deadline)[0] != b"E":
            pass
        self.owes_end = False

    def start(self) -> None:
        self.restarts += self.started
        self.started = True
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": root}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-c",
                f"import sys; sys.path.insert(0, {root!r}); from rlx.rewards.sandbox.jail import main; main()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert self.process.stdin is not None
        os.set_blocking(self.process.stdin.fileno(), False)  # send() writes what fits and reads meanwhile
        self.send(b"S", json.dumps(self.config).encode())
        try:
            kind, body = self.receive(time.monotonic() + START_TIMEOUT_S)
        except _Broken as err:
            self.stop()
            raise SandboxUnavailable(f"sandbox unavailable: the jail did not start ({err})") from None
        hello = json.loads(body)
        if kind != b"H" or "error" in hello:
            self.stop()
            raise SandboxUnavailable(hello.get("error", f"unexpected {kind!r} frame"))

    def send(self, kind: bytes, body: bytes) -> None:
        """Write one frame; while the pipe is full, keep reading what the jail sends (into `backlog`), so that a
        jail blocked on writing to us can never deadlock with us writing to it."""
        assert self.process is not None and self.process.stdin is not None and self.process.stdout is not None
        data = memoryview(frames.HEADER.pack(kind, len(body)) + body)
        out, inp = self.process.stdin.fileno(), self.process.stdout.fileno()
        deadline = time.monotonic() + self.limits.wall_s + BACKSTOP_S
        while data:
            readable, writable, _ = select.select([inp], [out], [], max(0.0, deadline - time.monotonic()))
            if not (readable or writable):
                raise _Broken("the jail stopped reading")
            if readable:
                self.backlog.append(self._read(inp))
            if writable:
                try:
                    data = data[os.write(out, data[: 1 << 20]) :]
                except BlockingIOError:
                    continue
                except OSError as err:
                    raise _Broken(f"the jail's pipe broke ({err})") from None

    def ready(self, deadline: float) -> bool:
        """Whether a frame arrives before `deadline`."""
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        return bool(self.backlog) or bool(select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0])

    def receive(self, deadline: float) -> tuple[bytes, bytes]:
        if self.backlog:
            return self.backlog.popleft()
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise _Broken("the jail stopped answering")
        return self._read(fd)

    def _read(self, fd: int) -> tuple[bytes, bytes]:
        try:
            frame = frames.read_frame(fd, self.cap)
        except (OSError, frames.Malformed) as err:
            raise _Broken(f"the jail sent a malformed frame ({err})") from None
        if frame is None:
            assert self.process is not None
            raise _Broken(f"the jail exited (status {self.process.poll()})")
        return frame

    def run(self, program: str, index: int, check: Callable[[Session, int], T]) -> T | Failure:
        try:
            if self.process is None or self.process.poll() is not None:
                self.start()
            elif self.owes_end:
                self.settle()
            session = Session(self, self.limits)
            self.send(b"S", json.dumps({"program": program, "limits": self.limits.__dict__}).encode())
            try:
                result: T | Failure = check(session, index)
            except Ended as ended:
                result = Failure(ended.status, ended.reason, ended.facts)
            session.close(wait=False)
            return result
        except (_Broken, SandboxUnavailable) as err:
            self.stop()
            log.warning(
                "sandbox: jail %d broke (%s); restarting it for the next program (this one is INFRA)", self.index, err
            )
            return Failure(Status.INFRA, str(err), RunFacts())

    def stop(self) -> None:
        if self.process is not None:
            jail = _children(self.process.pid)  # the zygote: PID 1 of the jail, which takes the jail with it
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            deadline = time.monotonic() + 10.0  # orphaned, the zygote is reaped by init: wait until it is gone
            while any(os.path.exists(f"/proc/{pid}") for pid in jail) and time.monotonic() < deadline:
                time.sleep(0.005)
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()
        self.process = None
        self.owes_end = False
        self.backlog.clear()


def _stop_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


class Sandbox:
    """`workers` jails running `harness` (a module with `serve(program, receive, send)`); see SANDBOX_API.md.

    Raises SandboxUnavailable (one line: what is missing, how to get it) when the jail cannot be built here."""

    def __init__(
        self,
        harness: str,
        workers: int,
        limits: Limits,
        modules: Sequence[str] = (),
        packages: Sequence[str] = (),
        preload: Sequence[str] = (),
        env: dict[str, str] | None = None,
        base_uid: int = 62000,
    ) -> None:
        if workers < 1:
            raise ValueError(f"reward.workers must be >= 1 (got {workers})")
        self.limits = limits
        self.workers = [
            _Worker(jail_config(harness, modules, packages, preload, env or {}, base_uid + i), limits, i)
            for i in range(workers)
        ]
        errors: list[BaseException] = []

        def start(worker: _Worker) -> None:
            try:
                worker.start()
            except BaseException as err:  # noqa: BLE001 - re-raised below, in the caller's thread
                errors.append(err)

        threads = [threading.Thread(target=start, args=(w,)) for w in self.workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            self.close()
            raise errors[0]
        # a reward dropped without close() still ends its jails (and reaps them: no zombie left in the trainer)
        weakref.finalize(self, _stop_all, list(self.workers))

    def map(self, programs: Sequence[str], check: Callable[[Session, int], T]) -> list[T | Failure]:
        """check(session, i) for each program i, in parallel over the workers; results in order."""
        todo: queue.Queue[int] = queue.Queue()
        for index in range(len(programs)):
            todo.put(index)
        missing = object()  # check may return None: "no result yet" is this sentinel instead
        results: list = [missing] * len(programs)
        errors: list[BaseException] = []

        def drain(worker: _Worker) -> None:
            while not errors:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = worker.run(programs[index], index, check)
                except BaseException as err:  # noqa: BLE001 - a checker bug: re-raised in the caller's thread
                    worker.stop()
                    errors.append(err)

        threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in self.workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        assert missing not in results, "every program has a result: check's, a Failure, or an error raised above"
        return results

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
