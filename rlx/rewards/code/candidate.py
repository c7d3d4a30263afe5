"""The candidate's own process, forked by the checker (rlx.rewards.code.checker) inside the sandboxed run.

`isolate` runs first in the fresh child: it keeps only the descriptors the child needs (the record pipe of the
run, whose final block decides the verdict, is closed), drops the payload (the test program with its expected
values was in the checker's memory and so in this copy of it) and installs the audit tripwire. The child
then runs candidate code and answers with plain data only: `serve_calls` returns each call's value as an
exact-type encoding (an object with its own `__eq__` is refused there), `run_script` runs a stdin/stdout program.
The checker is another process: it is not dumpable (the kernel cleared that when the sandbox dropped to its
uid), so this one cannot read its memory or descriptors through /proc, and a process that exits early, hangs
or writes garbage only fails its own tests. Every path ends in os._exit: the runner's `seal` never runs here.
"""

from __future__ import annotations

import os
import sys

from rlx.rewards.code.channel import receive, send
from rlx.rewards.code.plain import decode, encode
from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.sandbox.values import Unencodable

REQUEST_CAP = 64 << 20


def _name(error: BaseException) -> str:
    try:
        return str(type(error).__name__)[:80]
    except BaseException:  # noqa: BLE001 - a hostile exception class
        return "?"


def _text(error: BaseException) -> str:
    try:
        return str(error)[:300]
    except BaseException:  # noqa: BLE001
        return ""


def isolate(payload: dict, keep: tuple[int, ...], marks: int) -> str:
    """Become the candidate: only `keep` (and stdio) stay open; returns the code, the payload is emptied."""
    code = payload["code"]
    payload.clear()
    os.closerange(3, min(keep))
    for low, high in zip(sorted(keep), [*sorted(keep)[1:], 4096], strict=True):
        os.closerange(low + 1, high)
    install_guard(lambda record: send(marks, {"violation": record}), allow_processes=False, allow_ctypes=False)
    return code


def _load(code: str, name: str, marks: int) -> dict | None:
    namespace: dict = {"__name__": name}
    try:
        exec(compile(code, "<candidate>", "exec"), namespace)
    except MemoryError:
        send(marks, {"oom": True})
        return None
    except BaseException as err:  # noqa: BLE001 - SystemExit too: exiting early loads nothing
        send(marks, {"load_error": _name(err), "detail": _text(err)})
        return None
    return namespace


def serve_calls(payload: dict, requests: int, replies: int) -> None:
    """Load the code, then answer `{"call": name, "args": enc, "kwargs": enc}` frames until the pipe closes."""
    try:
        code = isolate(payload, (requests, replies), replies)
        namespace = _load(code, "__candidate__", replies)
        if namespace is None:
            return
        send(replies, {"loaded": True})
        while True:
            request = receive(requests, None, REQUEST_CAP)
            function = namespace.get(request["call"])
            try:
                if not callable(function):
                    raise NameError(f"the code defines no function {request['call']!r}")
                value = function(*decode(request["args"]), **decode(request["kwargs"]))
                reply = {"value": encode(value)}
            except MemoryError:
                reply = {"oom": True}
            except Unencodable as err:
                reply = {"error": "Unencodable", "detail": str(err)}
            except BaseException as err:  # noqa: BLE001 - SystemExit included: it only fails this call
                reply = {"error": _name(err), "detail": _text(err)}
            send(replies, reply)
    except BaseException:  # noqa: BLE001 - the checker sees the pipe close
        pass
    finally:
        os._exit(0)


def run_script(payload: dict, stdin: int, stdout: int, marks: int) -> None:
    """Run a stdin/stdout program once with `stdin`/`stdout` as fds 0 and 1. Exit status 0 when it ended
    normally or by sys.exit() / sys.exit(0) (judges accept that), 1 when it raised (the type goes to `marks`)."""
    status = 1
    try:
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.close(stdin)
        os.close(stdout)
        code = isolate(payload, (marks,), marks)
        try:
            exec(compile(code, "<candidate>", "exec"), {"__name__": "__main__"})
            status = 0
        except SystemExit as exit_:
            status = 0 if exit_.code is None or (type(exit_.code) is int and exit_.code == 0) else 1
        except MemoryError:
            send(marks, {"oom": True})
        except BaseException as err:  # noqa: BLE001
            send(marks, {"error": _name(err), "detail": _text(err)})
    except BaseException:  # noqa: BLE001
        status = 1
    finally:
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(status)
