"""In-process tripwire for the candidate: a CPython audit hook that blocks and *labels* forbidden acts.

The OS layers (namespaces, own uid, rlimits, private tmpfs) are what actually contain a candidate; this
hook only turns an attempt into an early, labelled VIOLATION record (process creation, signals, sockets,
ctypes, writes or deletions outside the working directory). Audit hooks cannot be removed from Python,
and the record is written before the act is refused, so catching the PermissionError does not hide it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from rlx.rewards.sandbox.records import Event

PROCESS_EVENTS = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "subprocess.Popen",
    "pty.spawn",
)
ALWAYS_BLOCKED = ("os.kill", "os.killpg", "signal.pthread_kill", "socket.", "sys.addaudithook")
PATH_EVENTS = {
    "os.remove": 0,
    "os.rmdir": 0,
    "os.rename": 0,
    "os.link": 1,
    "os.symlink": 1,
    "os.truncate": 0,
    "os.chmod": 0,
    "os.chown": 0,
    "os.mkdir": 0,
    "os.utime": 0,
    "shutil.rmtree": 0,
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def install_guard(emit: Callable[[dict], None], allow_processes: bool, allow_ctypes: bool) -> None:
    """Install the hook; the writable root is the current directory (the run's fresh temporary dir)."""
    root = os.path.realpath(os.getcwd())
    blocked = ALWAYS_BLOCKED + (() if allow_processes else PROCESS_EVENTS) + (() if allow_ctypes else ("ctypes.",))
    realpath, fspath, startswith = os.path.realpath, os.fspath, str.startswith
    state = {"busy": False}

    def outside(path) -> bool:
        if isinstance(path, int):
            return False
        resolved = realpath(fspath(path) if not isinstance(path, bytes) else path.decode("utf-8", "replace"))
        return not (resolved == root or startswith(resolved, root + "/"))

    def violation(event: str, args: tuple) -> None:
        if not state["busy"]:
            state["busy"] = True
            try:
                emit(Event("violation", what=event, detail=repr(args)[:200]).to_json())
            finally:
                state["busy"] = False
        raise PermissionError(f"sandbox: {event} is not allowed here")

    def hook(event: str, args: tuple) -> None:
        if state["busy"]:
            return
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags & WRITE_FLAGS)
            if path is not None and writing and outside(path):
                violation(event, args)
        elif event in PATH_EVENTS:
            if outside(args[PATH_EVENTS[event]]):
                violation(event, args)
        elif startswith(event, blocked):
            violation(event, args)

    sys.addaudithook(hook)
