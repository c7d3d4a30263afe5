"""The checker's end of one jail: the `rlx.rewards.sandbox.jail` process it started, the two pipes to it, and
its restart. rlx.rewards.sandbox.session runs sessions over it; docs/sandbox.md has the design.

Trust: what arrives on the pipe is read with a byte cap (`reply_cap`) and split into frames here; the bodies are
parsed by the session, never here. A jail that stops answering, exits or sends a malformed frame raises
`JailBroken` (the program in progress is INFRA and the jail is started again).
"""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import subprocess
import sys
import time

from rlx.errors import RlxError
from rlx.rewards.sandbox import frames

START_TIMEOUT_S = 120.0
BACKSTOP_S = 15.0  # beyond the wall limit, a zygote that has not reported is itself broken
CLOSE_TIMEOUT_S = 5.0  # a closed jail's zygote exits at once; past this it is killed instead


class SandboxUnavailable(RlxError):
    """The jail cannot be built here; the message is one line saying what is missing and how to get it (an
    RlxError: `python -m rlx` prints it once and exits, instead of scoring anything unsandboxed)."""


class JailBroken(Exception):
    """The jail itself broke (INFRA): the program in progress gets no verdict and the jail is restarted."""


class JailProcess:
    """One jail: a fresh `python -I` running rlx.rewards.sandbox.jail, started on first use and again after it
    broke. `patience_s` bounds every wait for it (a session's wall limit plus a backstop); `reply_cap` the size
    of one frame from it."""

    def __init__(self, config: dict, index: int, patience_s: float, reply_cap: int) -> None:
        self.config, self.index = config, index
        self.patience_s, self.cap = patience_s, reply_cap
        self.process: subprocess.Popen | None = None
        self.restarts = 0  # jails started after the first (one broke)
        self.started = False
        self.owes_end = False  # a closed session's E frame is still to be read
        self.backlog: collections.deque[tuple[bytes, bytes]] = collections.deque()  # frames read while sending

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def settle(self) -> None:
        """Read up to the E frame of the session closed last (what its candidate sent after the close is dropped)."""
        deadline = time.monotonic() + self.patience_s
        while self.receive(deadline)[0] != b"E":
            pass
        self.owes_end = False

    def start(self) -> None:
        """Start the jail and wait for its hello; SandboxUnavailable (one line) when it cannot be built here."""
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
        except JailBroken as err:
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
        try:  # the common case: the frame fits in the pipe at once, no select needed
            data = data[os.write(out, data[: 1 << 20]) :]
        except BlockingIOError:
            pass
        except OSError as err:
            raise JailBroken(f"the jail's pipe broke ({err})") from None
        deadline = time.monotonic() + self.patience_s
        while data:
            readable, writable, _ = select.select([inp], [out], [], max(0.0, deadline - time.monotonic()))
            if not (readable or writable):
                raise JailBroken("the jail stopped reading")
            if readable:
                self.backlog.append(self._read(inp))
            if writable:
                try:
                    data = data[os.write(out, data[: 1 << 20]) :]
                except BlockingIOError:
                    continue
                except OSError as err:
                    raise JailBroken(f"the jail's pipe broke ({err})") from None

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
            raise JailBroken("the jail stopped answering")
        return self._read(fd)

    def _read(self, fd: int) -> tuple[bytes, bytes]:
        try:
            frame = frames.read_frame(fd, self.cap)
        except (OSError, frames.Malformed) as err:
            raise JailBroken(f"the jail sent a malformed frame ({err})") from None
        if frame is None:
            assert self.process is not None
            raise JailBroken(f"the jail exited (status {self.process.poll()})")
        return frame

    def stop(self, graceful: bool = False) -> None:
        """End the jail and reap it. `graceful` (closing a healthy sandbox): close its input and let the zygote
        exit, so that every process of the jail is reaped under this one (its CPU time then shows in this
        process's RUSAGE_CHILDREN); otherwise, or past CLOSE_TIMEOUT_S, kill its process group."""
        if self.process is not None:
            jail = _children(self.process.pid)  # the zygote: PID 1 of the jail, which takes the jail with it
            exited = False
            if graceful and self.process.stdin is not None:
                self.process.stdin.close()
                try:
                    self.process.wait(CLOSE_TIMEOUT_S)
                    exited = True
                except subprocess.TimeoutExpired:
                    pass
            if not exited:
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


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []
