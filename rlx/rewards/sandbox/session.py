"""The checker's side of the sandbox: `Sandbox.map(programs, check)` runs each program in an isolated candidate
process and hands `check` a `Session` to talk to it with plain data. docs/sandbox.md describes the contract;
rlx.rewards.sandbox.jail_process the checker's end of one jail, rlx.rewards.sandbox.jail and .zygote the isolation.

Trust: this process is the checker. It never runs model output; what comes back is parsed with a size cap
(`Limits.output_kb`, enforced by the zygote and again here) and a JSON parser whose failures (a reply nested
too deep: RecursionError, too large: MemoryError) end the session as a labelled CRASH, never an exception.
"""

from __future__ import annotations

import json
import logging
import queue
import signal
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlx.rewards.base import Status
from rlx.rewards.sandbox import frames
from rlx.rewards.sandbox.allowlist import jail_config
from rlx.rewards.sandbox.jail_process import BACKSTOP_S, JailBroken, JailProcess, SandboxUnavailable

__all__ = ["Ended", "Failure", "Limits", "RunFacts", "Sandbox", "SandboxUnavailable", "Session", "ended_status"]
T = TypeVar("T")
log = logging.getLogger(__name__)


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

    def __init__(self, jail: JailProcess, limits: Limits) -> None:
        self._jail, self._limits = jail, limits
        self._deadline = time.monotonic() + limits.wall_s + BACKSTOP_S
        # when the program's time is over (the zygote kills the candidate then): the checker's own work on the
        # program (a unit test's test program) stops there too
        self.wall_deadline = time.monotonic() + limits.wall_s
        self._ended: Ended | None = None
        self.facts: RunFacts | None = None

    def request(
        self, message: dict, blobs: Sequence[bytes] = (), timeout_s: float | None = None
    ) -> tuple[dict, list[bytes]]:
        """Send one request, return the candidate's reply (untrusted plain data); raises Ended only. With
        `timeout_s`, a reply that takes longer ends the session as TIMEOUT (the candidate is stopped)."""
        self.send(message, blobs)
        return self.receive(timeout_s)

    def send(self, message: dict, blobs: Sequence[bytes] = ()) -> None:
        """Send one message without waiting (a request, or the answer to a request of the candidate's own)."""
        if self._ended is not None:
            raise self._ended
        self._jail.send(b"M", frames.pack_message(message, blobs))

    def receive(self, timeout_s: float | None = None) -> tuple[dict, list[bytes]]:
        """The candidate's next message; raises Ended only (TIMEOUT past `timeout_s`, as `request`)."""
        if self._ended is not None:
            raise self._ended
        patience = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if patience is not None and patience < self._deadline and not self._jail.ready(patience):
                self._end(Ended(Status.TIMEOUT, f"no reply within the request's {timeout_s} s"))
            kind, body = self._jail.receive(self._deadline)
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
        if not self.facts.started:
            raise JailBroken(f"the candidate's setup failed: {self.facts.output_tail.strip()[-300:]}")
        self._ended = Ended(status, reason, self.facts)
        raise self._ended

    def pipeline(self, messages: Sequence[dict]) -> list[dict]:
        """Send all `messages` at once, then read one reply each, in order (one round trip instead of many);
        raises Ended only, like `request`."""
        if self._ended is not None:
            raise self._ended
        for message in messages:
            self._jail.send(b"M", frames.pack_message(message))
        replies: list[dict] = []
        while len(replies) < len(messages):
            kind, body = self._jail.receive(self._deadline)
            if kind == b"M":
                try:
                    replies.append(frames.unpack_message(body)[0])
                except frames.Malformed as err:
                    self._end(Ended(Status.CRASH, f"malformed reply: {err}"))
            elif kind == b"E":
                self._finish(body)
        return replies

    def close(self, wait: bool = True) -> None:
        """End the session (the candidate is killed); `wait=False` leaves its E frame to be read before the next
        session's first frame (`JailProcess.settle`), saving a round trip when the checker is done."""
        if self.facts is not None:
            return
        self._jail.send(b"C", b"")
        self.facts = RunFacts(closed=True, started=True)
        if wait:
            self._jail.settle()
        else:
            self._jail.owes_end = True


def _facts(body: bytes) -> RunFacts:
    try:
        return RunFacts(**json.loads(body))
    except (ValueError, TypeError) as err:
        raise JailBroken(f"malformed facts from the zygote ({err})") from None


def _stop_all(jails: list[JailProcess]) -> None:
    for jail in jails:
        jail.stop()


def _run(
    jail: JailProcess, limits: Limits, program: str, index: int, check: Callable[[Session, int], T]
) -> T | Failure:
    """One program's session on `jail`: check's result, or a Failure saying how the session ended (INFRA when
    the jail broke: it is restarted for the next program)."""
    try:
        if not jail.alive:
            if jail.process is not None:  # it died between two programs (killed, out of memory): say so too
                log.warning(
                    "sandbox: jail %d exited between programs (status %s); restarting it",
                    jail.index,
                    jail.process.returncode,
                )
            jail.start()
        elif jail.owes_end:
            jail.settle()
        session = Session(jail, limits)
        jail.send(b"S", json.dumps({"program": program, "limits": limits.__dict__}).encode())
        try:
            result: T | Failure = check(session, index)
        except Ended as ended:
            result = Failure(ended.status, ended.reason, ended.facts)
        session.close(wait=False)
        return result
    except (JailBroken, SandboxUnavailable) as err:
        jail.stop()
        log.warning(
            "sandbox: jail %d broke (%s); restarting it for the next program (this one is INFRA)", jail.index, err
        )
        return Failure(Status.INFRA, str(err), RunFacts())


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
        patience, cap = limits.wall_s + BACKSTOP_S, limits.output_kb * 1024 + 65536
        self.workers = [
            JailProcess(jail_config(harness, modules, packages, preload, env or {}, base_uid + i), i, patience, cap)
            for i in range(workers)
        ]
        errors: list[BaseException] = []

        def start(worker: JailProcess) -> None:
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

        def drain(worker: JailProcess) -> None:
            while not errors:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = _run(worker, self.limits, programs[index], index, check)
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
            worker.stop(graceful=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
