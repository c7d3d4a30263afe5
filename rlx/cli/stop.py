"""How a signal stops a run: one handler records it, and the run acts on it where acting loses nothing.

SIGTERM and SIGINT (Ctrl-C) are handled from the job's start (`install`); the checkpoint callback adds its own
(SIGUSR1, `checkpoint.signals`). Whatever the phase, the handler first records the signal (`pending`), then:
  - inside `deferred(...)` (a checkpoint, the exported policy or summary.json being written) it returns: the
    write finishes, and leaving the section acts on the signal;
  - in the RL loop, for the signals the checkpoint callback names (`enter_step_boundaries`), it returns: the step
    finishes, its checkpoint is written and the run exits (rlx.callbacks.checkpoint); a second signal there
    stops at once, without that checkpoint (Ctrl-C twice);
  - anywhere else (imports, the warm start, a model load, an evaluation) it raises `Stopped` at once: nothing
    there is worth finishing, and a cluster gives ~10 s between SIGTERM and SIGKILL.
Python drops an exception raised while it runs a `__del__` or a weakref callback (it prints "Exception
ignored in ..." and goes on): a `Stopped` raised there is lost, but the signal stays recorded, and `check()`
raises it again at the next phase change (rlx.cli.status.enter), warm-start step (rlx.cli.ticker) or Lightning
batch hook (rlx.callbacks.checkpoint); the dropped one is not printed (`sys.unraisablehook`). A signal is never
handled by raising in the middle of a write.
Standard library only.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

log = logging.getLogger("rlx")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_pending: int | None = None  # the first stop signal received
_repeated = False  # a second one came: stop at once wherever no write is in flight
_writes: list[str] = []  # the writes in flight (`deferred`), innermost last
_boundary: frozenset[int] = frozenset()  # the signals the RL loop acts on at its next step boundary
_installed: dict[int, object] = {}  # signal -> the handler before ours (restored by `uninstall`)
_stopping = False  # the run is already stopping: further signals are only recorded


class Stopped(SystemExit):
    """A signal acted on outside a step boundary: exit status 128 + the signal number, as a shell reports it."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def name(signum: int) -> str:
    return signal.Signals(signum).name


def install(signals: Iterable[int] = STOP_SIGNALS) -> None:
    """Route `signals` to the one handler (main thread only: Python runs handlers there). Again after a library
    replaced it (Lightning composes its own SIGTERM handler with ours at every fit and validate)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if not isinstance(sys.unraisablehook, _QuietDroppedStop):
        sys.unraisablehook = _QuietDroppedStop(sys.unraisablehook)
    for signum in signals:
        previous = signal.signal(signum, _handle)
        if previous is not _handle:
            _installed.setdefault(signum, previous)


def uninstall(signals: Iterable[int]) -> None:
    """Give `signals` back to the handlers they had before `install` (the checkpoint callback's extra ones)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in signals:
        if signum in _installed and signum not in STOP_SIGNALS:
            signal.signal(signum, _installed.pop(signum))  # type: ignore[arg-type]


def restore_all() -> None:
    """Every signal back to the handler it had before `install` (a test that ran a job in its own process)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, handler in list(_installed.items()):
        signal.signal(signum, handler)  # type: ignore[arg-type]
    _installed.clear()


def reset() -> None:
    """A new job in this process (a sweep's worker runs several): nothing recorded yet."""
    global _pending, _repeated, _boundary, _stopping
    _pending, _repeated, _boundary, _stopping = None, False, frozenset(), False
    _writes.clear()


def pending() -> int | None:
    """The stop signal received, if any (the first one)."""
    return _pending


def must_stop_now() -> bool:
    """A signal was received that nothing is waiting to act on: no write is in flight, and it is not one the RL
    loop acts on at its step boundary (or it came twice)."""
    if _pending is None or _writes or _stopping:
        return False
    return _repeated or _pending not in _boundary


def check() -> None:
    """Raise `Stopped` for a recorded signal that must stop the run now (see the module's docstring)."""
    if must_stop_now():
        assert _pending is not None
        raise Stopped(_pending)


def record_only() -> None:
    """The run is ending anyway (its status and summary are being written): later signals are only recorded."""
    global _stopping
    _stopping = True


@contextmanager
def deferred(what: str) -> Iterator[None]:
    """A write that a signal must not cut: the signal waits for it, then `check()` acts on it."""
    _writes.append(what)
    try:
        yield
    finally:
        _writes.pop()
    check()


def enter_step_boundaries(signals: Iterable[int]) -> None:
    """The RL loop (from Lightning's on_train_start to on_train_end): `signals` are acted on by the loop itself
    at its next step boundary, after that step's checkpoint (rlx.callbacks.checkpoint)."""
    global _boundary
    _boundary = frozenset(signals)


def leave_step_boundaries() -> None:
    global _boundary
    _boundary = frozenset()


class _QuietDroppedStop:
    """sys.unraisablehook that leaves out a `Stopped` Python dropped (the signal stays recorded and is raised again
    at the next poll point: its traceback would only alarm); anything else goes to the previous hook."""

    def __init__(self, previous) -> None:
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, Stopped):
            log.debug("a stop raised where Python drops exceptions (%s): raised again at the next check", unraisable)
            return
        self.previous(unraisable)


def _handle(signum: int, frame) -> None:
    global _pending, _repeated
    first = _pending is None
    if first:
        _pending = signum
    else:
        _repeated = True
    if _stopping:
        return
    if signum in _boundary and first:
        log.warning(
            "received %s: finishing this step, then a checkpoint and exit (%s again stops at once, without it)",
            name(signum),
            name(signum),
        )
        return
    if _writes:
        if first or _repeated:
            log.warning("received %s: finishing the write of %s, then stopping", name(signum), _writes[-1])
        return
    assert _pending is not None
    raise Stopped(_pending)
