"""Runs inside the sandboxed candidate process (H): execute the code, evaluate each test call, emit records.

Only the test *calls* are sent in; expected outputs never enter the sandbox, so nothing the candidate reads
(files, the call stack, `gc`) can reveal them, and a forged record still has to contain the right value.
One record per test: {"test": i, "value": <exact-type encoding>} or {"test": i, "error": <exception type>}.
The process always ends with os._exit, so atexit hooks never run.
"""

from __future__ import annotations

from collections.abc import Callable

from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.sandbox.values import Unencodable, encode


def _name(error: BaseException) -> str:
    try:
        return str(type(error).__name__)[:80]
    except BaseException:  # noqa: BLE001 - a hostile exception class must not break the harness
        return "?"


def run(payload: dict, emit: Callable[[dict], None]) -> None:
    if payload["guard"]:  # off only in tests that show the OS layers contain a candidate on their own
        install_guard(emit, allow_processes=False, allow_ctypes=False)
    namespace: dict = {"__name__": "__candidate__"}
    try:
        exec(compile(payload["code"], "<candidate>", "exec"), namespace)
    except MemoryError:
        emit({"event": "oom"})
        return
    except BaseException as err:  # noqa: BLE001 - SystemExit included: exiting early loads nothing
        emit({"event": "load_error", "error": _name(err)})
        return
    emit({"event": "loaded"})
    for index, call in enumerate(payload["calls"]):
        try:
            record = {"test": index, "value": encode(eval(call, namespace))}
        except MemoryError:
            emit({"event": "oom"})
            return
        except Unencodable as err:
            record = {"test": index, "error": "Unencodable", "detail": str(err)}
        except BaseException as err:  # noqa: BLE001
            record = {"test": index, "error": _name(err)}
        emit(record)
    emit({"event": "done"})
