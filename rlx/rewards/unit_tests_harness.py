"""Runs inside the candidate's process (rlx.rewards.sandbox): loads the program, answers the checker's requests
with plain data. It holds nothing secret: only the program and the inputs of each request ever reach it; the
expected values and every comparison stay in the checker (rlx.rewards.unit_tests), so whatever the candidate
does to this code (patch it, exit early, forge replies) it can only ever send back values it computed.

Requests and replies (SANDBOX_API.md): {"op": "load"} -> {"ok": true} | {"error", "detail"};
{"op": "call", "name", "args": [enc], "kwargs": [[name, enc]]} and {"op": "eval", "expr"} -> {"value": enc} |
{"error", "detail"}; {"op": "stdio", "stdin"} -> {"stdout", "error", "exit_code"}. Values are the exact-type
encoding of rlx.rewards.sandbox.values.
"""

from __future__ import annotations

import io
import sys

from rlx.rewards.sandbox.values import Unencodable, decode, encode

DETAIL = 200


def _error(err: BaseException) -> dict:
    try:
        return {"error": str(type(err).__name__)[:80], "detail": str(err)[:DETAIL]}
    except BaseException:  # noqa: BLE001 - a hostile exception class must not break the reply
        return {"error": "?", "detail": ""}


def _call(namespace: dict, message: dict):
    args = [decode(a) for a in message["args"]]
    kwargs = {k: decode(v) for k, v in message.get("kwargs", [])}
    return namespace[message["name"]](*args, **kwargs)


def _answer(compute, *inputs) -> dict:
    try:
        return {"value": encode(compute(*inputs))}
    except Unencodable as err:
        return {"error": "Unencodable", "detail": str(err)[:DETAIL]}
    except BaseException as err:  # noqa: BLE001 - SystemExit and MemoryError included: labelled by the checker
        return _error(err)


def _stdio(program: str, stdin: str) -> dict:
    """Run `program` as __main__ in fresh globals with `stdin`; its stdout comes back as text."""
    out = io.StringIO()
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = io.StringIO(stdin), out
    error, code = None, None
    try:
        exec(compile(program, "<candidate>", "exec"), {"__name__": "__main__"})
    except SystemExit as err:
        code = err.code if isinstance(err.code, int) else (0 if err.code is None else 1)
    except BaseException as err:  # noqa: BLE001
        error = _error(err)["error"]
    finally:
        sys.stdin, sys.stdout = saved
    return {"stdout": out.getvalue()[:1_000_000], "error": error, "exit_code": code}


def serve(program: str, receive, send) -> None:
    namespace: dict = {"__name__": "__candidate__"}
    while (request := receive()) is not None:
        message = request[0]
        op = message.get("op")
        if op == "load":
            try:
                exec(compile(program, "<candidate>", "exec"), namespace)
                reply: dict = {"ok": True}
            except BaseException as err:  # noqa: BLE001 - SystemExit included: exiting early loads nothing
                reply = _error(err)
        elif op == "call":
            reply = _answer(_call, namespace, message)
        elif op == "eval":
            reply = _answer(eval, message["expr"], namespace)
        elif op == "stdio":
            reply = _stdio(program, message["stdin"])
        else:
            reply = {"error": "BadRequest", "detail": f"unknown op {op!r}"}
        send(reply)
