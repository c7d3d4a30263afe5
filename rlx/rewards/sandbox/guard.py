"""In-process tripwire for the candidate: a CPython audit hook that blocks and *labels* forbidden acts.

The OS layers (namespaces, own uid, rlimits, private tmpfs) are what actually contain a candidate; this
hook turns an attempt into an early, labelled VIOLATION record (process creation, signals, sockets,
ctypes, writes or deletions outside the working directory). Audit hooks cannot be removed from Python,
and the record is written before the act is refused, so catching the PermissionError does not hide it.

It also keeps the harness's state out of the candidate's reach (its records and the nonce of their final
block, rlx.rewards.sandbox.runner.recorder; the payload): every way we know of in Python 3.11 to reach another
frame or an object one holds is refused. Audited, so refused by the hook: sys._getframe (except from the
helpers in NAME_READERS, which hand no frame back), sys._current_frames, sys.settrace / setprofile (a tracer
is handed frames; threading.settrace goes through sys.settrace in the new thread), gc.get_objects /
get_referrers / get_referents, and the frame attributes of tracebacks, generators and coroutines
(object.__getattr__ on tb_frame, gi_frame, cr_frame, ag_frame). Not audited in 3.11, so replaced instead:
signal.signal with a Python handler (which is handed the running frame; SIG_IGN and SIG_DFL stay allowed), and
_imp.create_builtin for _signal (a fresh module would bring the original function back). ctypes reads any
memory, so where it is allowed (the kernel harness on CUDA) this part is moot. Threads are not audited in 3.11
and need no refusal here: a thread reaches no frame either, and can only garble the final block by writing
into it, never forge it.
"""

from __future__ import annotations

import _imp
import _signal
import collections
import enum
import os
import sys
import traceback
import types
import typing
from collections.abc import Callable

import typing_extensions

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
INTROSPECTION = (
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
)
FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
# callers of sys._getframe that read something of their caller's frame and hand no frame back: the module name
# (namedtuple, typing, Enum's functional API), whether `Generic[...]` is being subscripted (typing_extensions),
# the stack as text (traceback's format/extract/print_stack: torch.manual_seed calls one)
NAME_READERS = {collections.namedtuple.__code__, typing._caller.__code__}  # type: ignore[attr-defined]
NAME_READERS |= {enum.EnumType._create_.__code__}  # type: ignore[attr-defined]
NAME_READERS |= {typing_extensions._has_generic_or_protocol_as_origin.__code__}  # type: ignore[attr-defined]
NAME_READERS |= {traceback.format_stack.__code__, traceback.extract_stack.__code__, traceback.print_stack.__code__}


def _violation(what: str, detail: str) -> dict:
    """Event("violation", what=what, detail=detail).to_json(), built without the class, whose methods candidate
    code could replace (tests/rewards/test_sandbox_records.py checks they agree)."""
    return {"event": "violation", "what": what, "detail": detail}


def install_guard(emit: Callable[[dict], None], allow_processes: bool, allow_ctypes: bool) -> None:
    """Install the hook; the writable root is the current directory (the run's fresh temporary dir)."""
    root = os.path.realpath(os.getcwd())
    blocked = ALWAYS_BLOCKED + (() if allow_processes else PROCESS_EVENTS) + (() if allow_ctypes else ("ctypes.",))
    realpath, fspath, startswith, getframe = os.path.realpath, os.fspath, str.startswith, sys._getframe
    state = {"busy": False}
    mark = _violation  # bound now: candidate code can replace module attributes, not this closure's cells

    def outside(path) -> bool:
        if isinstance(path, int):
            return False
        resolved = realpath(fspath(path) if not isinstance(path, bytes) else path.decode("utf-8", "replace"))
        return not (resolved == root or startswith(resolved, root + "/"))

    def violation(event: str, args: tuple) -> None:
        if not state["busy"]:
            state["busy"] = True
            try:
                emit(mark(event, repr(args)[:200]))
            finally:
                state["busy"] = False
        raise PermissionError(f"sandbox: {event} is not allowed here")

    def caller_reads_a_name() -> bool:
        state["busy"] = True  # this lookup raises sys._getframe itself
        try:
            return getframe(2).f_code in NAME_READERS  # 0: here, 1: the hook, 2: who called sys._getframe
        finally:
            state["busy"] = False

    def hook(event: str, args: tuple) -> None:
        if state["busy"]:
            return
        if event == "sys._getframe":
            if not caller_reads_a_name():
                violation(event, ())
        elif event in INTROSPECTION:
            violation(event, ())
        elif event == "object.__getattr__":
            if args[1] in FRAME_ATTRIBUTES:
                violation(event, (type(args[0]).__name__, args[1]))
        elif event == "open":
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
    create_builtin, set_handler = _imp.create_builtin, _signal.signal

    def signal_without_frames(signalnum, handler):  # SIG_IGN / SIG_DFL are fine: they run no Python
        if callable(handler):
            violation("signal.signal", ())
        return set_handler(signalnum, handler)

    def create_builtin_but_signal(spec):
        name = spec.name  # read once: the module is made from a plain spec, not one that could answer twice
        if type(name) is not str or name == "_signal":
            violation("_imp.create_builtin", ())
        return create_builtin(types.SimpleNamespace(name=name))

    _signal.signal = signal_without_frames  # signal.signal calls it
    _imp.create_builtin = create_builtin_but_signal
