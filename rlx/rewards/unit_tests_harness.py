"""Runs inside the sandboxed candidate process (H): execute the code, evaluate each test call, emit records.

Only the test *calls* are sent in; expected outputs never enter the sandbox, so nothing the candidate reads
(files, the call stack, `gc`) can reveal them, and a forged record still has to contain the right value.
Records (rlx.rewards.sandbox.records): events loaded / oom / load_error / done, and one CallOutcome per test
(its value's exact-type encoding, or the exception type it raised). The process always ends with os._exit,
so atexit hooks never run.
"""

from __future__ import annotations

from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.sandbox.records import CallOutcome, Event
from rlx.rewards.sandbox.runner import Emit
from rlx.rewards.sandbox.values import Unencodable, encode


def _name(error: BaseException) -> str:
    try:
        return str(type(error).__name__)[:80]
    except BaseException:  # noqa: BLE001 - a hostile exception class must not break the harness
        return "?"


def run(payload: dict, emit: Emit, alarm: Emit) -> None:
    """emit: keep a record for the final block; alarm: the tripwire's, also written at once (runner.recorder)."""
    if payload["guard"]:  # off only in tests that show the OS layers contain a candidate on their own
        install_guard(alarm, allow_processes=False, allow_ctypes=False)
    namespace: dict = {"__name__": "__candidate__"}
    try:
        exec(compile(payload["code"], "<candidate>", "exec"), namespace)
    except MemoryError:
        emit(Event("oom").to_json())
        return
    except BaseException as err:  # noqa: BLE001 - SystemExit included: exiting early loads nothing
        emit(Event("load_error", error=_name(err)).to_json())
        return
    emit(Event("loaded").to_json())
    for index, call in enumerate(payload["calls"]):
        try:
            outcome = CallOutcome(index, value=encode(eval(call, namespace)))
        except MemoryError:
            emit(Event("oom").to_json())
            return
        except Unencodable as err:
            outcome = CallOutcome(index, error="Unencodable", detail=str(err))
        except BaseException as err:  # noqa: BLE001
            outcome = CallOutcome(index, error=_name(err))
        emit(outcome.to_json())
    emit(Event("done").to_json())
