"""rlx.cli.stop in one process, signals sent to itself: a signal is recorded first and acted on where nothing is
lost (after a write, at a step boundary, at once elsewhere), and a stop that Python drops (an exception raised
inside a `__del__`) is raised again at the next phase change instead of being lost."""

from __future__ import annotations

import gc
import os
import signal
import sys
from types import SimpleNamespace

import pytest

from rlx.cli import status, stop


class SignalWhenCollected:
    """Sends `signum` to this process from its `__del__`, where Python prints an exception and drops it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        for _ in range(100):  # a few bytecodes: the handler runs here, inside __del__
            pass


def test_outside_any_write_or_loop_a_signal_stops_at_once():
    stop.install()
    with pytest.raises(stop.Stopped) as stopped:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):
            pass
    assert stopped.value.code == 128 + signal.SIGTERM and stop.pending() == signal.SIGTERM


def test_a_signal_during_a_write_waits_for_it_then_stops(tmp_path):
    stop.install()
    path = tmp_path / "state.bin"
    with pytest.raises(stop.Stopped) as stopped:
        with stop.deferred("the state"):
            with path.open("wb") as handle:
                handle.write(b"a" * 1000)
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C halfway through the write
                handle.write(b"b" * 1000)
            written = path.stat().st_size
    assert written == 2000 and stopped.value.code == 128 + signal.SIGINT  # whole, and then the stop


def test_in_the_rl_loop_the_first_signal_waits_for_the_step_boundary_and_a_second_stops_at_once():
    stop.install([*stop.STOP_SIGNALS, signal.SIGUSR1])
    stop.enter_step_boundaries([signal.SIGTERM, signal.SIGINT])
    try:
        os.kill(os.getpid(), signal.SIGINT)
        stop.check()  # nothing to do here: the loop checkpoints at its boundary, then exits
        assert stop.pending() == signal.SIGINT and not stop.must_stop_now()
        with pytest.raises(stop.Stopped) as stopped:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C twice: now, without that checkpoint
            for _ in range(100):
                pass
        assert stopped.value.code == 128 + signal.SIGINT
    finally:
        stop.leave_step_boundaries()


def test_a_signal_the_loop_does_not_act_on_stops_it_at_once():
    stop.install()
    stop.enter_step_boundaries([signal.SIGUSR1])  # checkpoint.signals without SIGTERM
    try:
        with pytest.raises(stop.Stopped):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):
                pass
    finally:
        stop.leave_step_boundaries()


def test_a_stop_dropped_inside_a_del_is_raised_at_the_next_phase_change(monkeypatch):
    """The reported failure: the handler raised inside fsspec's file clean-up, Python dropped the exception, and
    the run trained on and said "completed". The signal stays recorded, the next poll point raises it, and the
    dropped one is not printed as an alarming traceback."""
    shown = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: shown.append(unraisable.exc_type))
    stop.install()
    SignalWhenCollected(signal.SIGINT)  # collected at once: the handler's Stopped is raised inside __del__...
    gc.collect()
    assert stop.pending() == signal.SIGINT  # ...and dropped there by Python: the line above went on
    assert shown == []
    with pytest.raises(stop.Stopped) as stopped:
        status.enter("evaluation after RL")
    assert stopped.value.code == 128 + signal.SIGINT
    sys.unraisablehook(SimpleNamespace(exc_type=ValueError, exc_value=ValueError("x")))
    assert shown == [ValueError]  # any other dropped error still reaches the hook before rlx's


def test_after_the_run_records_its_end_signals_are_only_recorded():
    stop.install()
    stop.record_only()
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(100):
        pass
    stop.check()
    assert stop.pending() == signal.SIGTERM
