"""An advisory lock that says who holds it: an `flock` on a small file that its holder fills with its PID, host
and start time (and, for a long phase, its progress).

The kernel releases an flock when its holder dies, however it dies, so a stale lock (a killed job, a crashed
node's requeued successor) is simply taken over: there is no PID to check and no lock file to delete by hand.
A process that cannot take the lock opens the file for reading only (`a+` never truncates), so it changes
nothing its holder wrote. Standard library only: the run directory's lock is taken before the heavy imports.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO


class HeldLock:
    """`HeldLock(path).acquire()` -> True if this process now holds it; `holder()` -> what the holder wrote."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.handle: IO[str] | None = None
        self.since: str | None = None

    def acquire(self, blocking: bool = False) -> bool:
        if self.handle is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 — held open for the lock's lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.close()
            return False
        self.handle = handle
        self.describe()
        return True

    def describe(self, **progress) -> None:
        """Rewrite the holder's record: PID, host, since, and any progress (step, total, loss...)."""
        if self.handle is None:
            return
        self.since = self.since or time.strftime("%Y-%m-%d %H:%M:%S")
        record = {"pid": os.getpid(), "host": socket.gethostname(), "since": self.since, **progress}
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(record))
        self.handle.flush()

    def describe_progress(self, progress: dict) -> None:
        self.describe(**progress)

    def holder(self) -> dict:
        """The current holder's record ({} when it has not written one yet)."""
        try:
            return json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}

    def release(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None


def describe_holder(record: dict) -> str:
    """`PID 4242 on node7 (since 2026-12-02 11:40:01)`."""
    if not record:
        return "another process (it has not said which yet)"
    return f"PID {record.get('pid', '?')} on {record.get('host', '?')} (since {record.get('since', '?')})"
