"""The harness of reward=unit_tests's code formats (`rlx.rewards.code.checker:run`), inside one sandboxed run.

Two processes, neither able to reach the other's memory:

    H: the checker (trusted code only: the row's test program)  ──fork──▶  the candidate (rlx.rewards.code.candidate)

`program` payloads (assert lines, check(candidate) programs): the checker runs the test program with each
function under test bound to a `Proxy`. Calling it sends the arguments as plain data to the candidate's process,
which calls the real function and sends back the result as plain data; the test's own `assert`s then compare
values rebuilt here, under the row's comparison semantics (rlx.rewards.code.compare). An object with an
always-true `__eq__` cannot cross (refused as unencodable); a candidate that exits early, hangs past the call
timeout or garbles the pipe fails the calls it did not answer. Each `assert` of the program is one test (its
`site`); the records say, per site, whether every run of it passed, or the first failure with the value got
and the value expected.

`stdio` payloads: each case forks a fresh candidate that runs the program with the case's input on fd 0; its
output (or, when long, a hash of the normalised output) is recorded. Expected outputs never enter the sandbox:
the reward compares them outside (rlx.rewards.code.reward).
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import time

from rlx.rewards.code.candidate import run_script, serve_calls
from rlx.rewards.code.channel import Broken, receive, send
from rlx.rewards.code.compare import Comparison, normalise_output
from rlx.rewards.code.plain import Malformed, decode, encode
from rlx.rewards.sandbox.records import Event
from rlx.rewards.sandbox.runner import Emit
from rlx.rewards.sandbox.values import Unencodable

REPLY_CAP = 8 << 20
SHOWN = 200  # characters of a value shown in a failure record


class CandidateFailure(Exception):
    """A call the candidate did not answer with a value: it raised (`kind` = its exception type), timed out,
    exited, returned something that is not plain data, or ran out of memory."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail = kind, detail


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _violation(message: dict, alarm: Emit) -> None:
    record = message.get("violation")
    what = record.get("what") if isinstance(record, dict) else None
    detail = record.get("detail") if isinstance(record, dict) else None
    alarm(Event("violation", what=str(what)[:100], detail=str(detail)[:200]).to_json())


class Candidate:
    """The checker's end of the candidate's process: one call at a time, each with a deadline."""

    def __init__(self, payload: dict, timeout_s: float, alarm: Emit) -> None:
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            serve_calls(payload, requests_r, replies_w)  # never returns
        os.close(requests_r)
        os.close(replies_w)
        self.requests, self.replies, self.timeout_s, self.alarm = requests_w, replies_r, timeout_s, alarm
        self.dead: CandidateFailure | None = None
        try:
            self.load = self._reply(time.monotonic() + timeout_s)
        except Broken as err:  # exited or hung while loading: it loads nothing
            self.load = {"load_error": err.kind, "detail": err.detail}

    def _reply(self, deadline: float) -> dict:
        while True:
            message = receive(self.replies, deadline, REPLY_CAP)
            if "violation" in message:
                _violation(message, self.alarm)
                continue
            return message

    def call(self, name: str, args: tuple, kwargs: dict):
        if self.dead is not None:
            raise self.dead
        try:
            request = {"call": name, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        except Unencodable as err:
            raise CandidateFailure("ArgumentNotPlain", f"the test passes {err}: only plain data crosses") from None
        try:
            send(self.requests, request)
            reply = self._reply(time.monotonic() + self.timeout_s)
        except (Broken, OSError) as err:
            kind = err.kind if isinstance(err, Broken) else "Exited"
            self.dead = CandidateFailure(kind, f"call {name}(...) got no answer ({err})")
            self.kill()
            raise self.dead from None
        if reply.get("oom"):
            raise CandidateFailure("MemoryError")
        if "error" in reply:
            raise CandidateFailure(str(reply["error"])[:80], str(reply.get("detail", ""))[:300])
        try:
            return decode(reply.get("value"))
        except Malformed as err:
            raise CandidateFailure("Garbled", str(err)) from None

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


class Proxy:
    """Stands for the function under test in the checker's namespace; returns plain data only."""

    def __init__(self, candidate: Candidate, name: str, sites: Sites) -> None:
        self._candidate, self._name, self._sites = candidate, name, sites

    def __call__(self, *args, **kwargs):
        self._sites.calls += 1
        return self._candidate.call(self._name, args, kwargs)


class Sites:
    """Per-assert bookkeeping the transformed test program calls (rlx.rewards.code.formats.instrument)."""

    def __init__(self, count: int, comparison: Comparison) -> None:
        self.comparison = comparison
        self.current: int | None = None
        self.reached: set[int] = set()
        self.failures: dict[int, dict] = {}
        self.count = count
        # Whether an assert tests the candidate at all: a call of the function under test happened since the
        # previous assert ended (HumanEval's `assert True, "..."` lines make none: they are not tests, or an
        # empty body would earn a share of them under scoring=fraction).
        self.calls, self.mark = 0, 0
        self.involved: set[int] = set()

    def _done(self, site: int) -> None:
        if self.calls > self.mark:
            self.involved.add(site)
        self.mark, self.current = self.calls, None

    def enter(self, site: int) -> None:
        self.current = site
        self.reached.add(site)

    def check(self, site: int, ok) -> None:
        if not ok and site not in self.failures:
            self.failures[site] = {"test": site, "ok": False}
        self._done(site)

    def check_eq(self, site: int, got, expected) -> None:
        if not self.comparison.equal(got, expected) and site not in self.failures:
            self.failures[site] = {"test": site, "ok": False, "got": _show(got), "expected": _show(expected)}
        self._done(site)

    def abort(self, error: BaseException) -> None:
        """A step raised outside a comparison: the current site (if any) fails with the cause."""
        kind = error.kind if isinstance(error, CandidateFailure) else type(error).__name__
        detail = error.detail if isinstance(error, CandidateFailure) else str(error)[:300]
        failure = {"ok": False, "error": kind, "detail": detail}
        if self.current is not None and self.current not in self.failures:
            self.failures[self.current] = {"test": self.current, **failure}
        elif self.current is None:
            self.failures.setdefault(-1, {"test": -1, **failure})
        self.current = None


def run_program(payload: dict, emit: Emit, alarm: Emit) -> None:
    candidate = Candidate(payload, payload["call_timeout_s"], alarm)  # forks first: see candidate.isolate
    try:
        if "loaded" not in candidate.load:
            emit(_load_event(candidate.load))
            return
        emit(Event("loaded").to_json())
        sites = Sites(payload["sites"], Comparison(**payload["compare"]))
        namespace: dict = {
            "__name__": "__checker__",
            "__rlx_enter__": sites.enter,
            "__rlx_assert__": sites.check,
            "__rlx_assert_eq__": sites.check_eq,
        }
        try:
            exec(compile(payload["setup"], "<setup>", "exec"), namespace)
        except Exception as err:  # noqa: BLE001 - the row's own code: a dataset error, not the candidate's
            emit({"event": "setup_error", "error": type(err).__name__, "detail": str(err)[:300]})
            return
        for name in payload["proxies"]:
            namespace[name] = Proxy(candidate, name, sites)
        namespace["__rlx_proxy__"] = lambda name: Proxy(candidate, name, sites)
        aborted = False
        for step in payload["steps"]:
            try:
                exec(compile(step, "<test>", "exec"), namespace)
            except Exception as err:  # noqa: BLE001 - the test program stopped: its current assert fails
                sites.abort(err)
                aborted = True
        for site in range(sites.count):
            if site in sites.failures:
                emit(sites.failures[site])
            elif site in sites.reached and site not in sites.involved:
                emit({"test": site, "ok": True, "counts": False})  # passed without calling the candidate
            elif site in sites.reached or not aborted:
                emit({"test": site, "ok": True})
            else:
                emit({"test": site, "ok": False, "error": "NotReached", "detail": "the test program stopped earlier"})
        if -1 in sites.failures:
            emit({"event": "aborted", **{k: v for k, v in sites.failures[-1].items() if k != "test"}})
        emit(Event("done").to_json())
    finally:
        candidate.kill()


def _load_event(message: dict) -> dict:
    if message.get("oom"):
        return Event("oom").to_json()
    error = str(message.get("load_error", "Garbled"))[:80]
    return {**Event("load_error", error=error).to_json(), "detail": str(message.get("detail", ""))[:300]}


def run_case(payload: dict, stdin_text: str, alarm: Emit) -> dict:
    """One stdin/stdout case in a fresh candidate process; the record of what it printed."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    marks_r, marks_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(in_w)
        os.close(out_r)
        os.close(marks_r)
        run_script(payload, in_r, out_w, marks_w)  # never returns
    for fd in (in_r, out_w, marks_w):
        os.close(fd)
    deadline = time.monotonic() + payload["case_timeout_s"]
    data, cap = stdin_text.encode(), payload["output_cap"]
    output, messages, timed_out, too_long = bytearray(), bytearray(), False, False
    readers = {out_r: output, marks_r: messages}
    writing = in_w if data else None
    if writing is None:
        os.close(in_w)
    while readers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        readable, writable, _ = select.select(list(readers), [writing] if writing is not None else [], [], remaining)
        if writing is not None and writable:
            try:
                data = data[os.write(writing, data[: 1 << 16]) :]
            except BrokenPipeError:
                data = b""
            if not data:
                os.close(writing)
                writing = None
        for fd in readable:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                readers[fd].extend(chunk)
            else:
                del readers[fd]
        if len(output) > cap:
            too_long = True
            break
    if timed_out or too_long:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    for fd in (out_r, marks_r, *([writing] if writing is not None else [])):
        os.close(fd)
    record: dict = {"exit": os.waitstatus_to_exitcode(status)}
    if timed_out or too_long:
        record["error"] = "Timeout" if timed_out else "OutputTooLong"
    for message in _frames(bytes(messages)):
        if "violation" in message:
            _violation(message, alarm)
        elif message.get("oom"):
            record["error"] = "MemoryError"
        elif "error" in message:
            record.setdefault("error", str(message["error"])[:80])
            record.setdefault("detail", str(message.get("detail", ""))[:300])
    text = output.decode("utf-8", "replace")
    normalised = normalise_output(text, payload["normalise"])
    if len(normalised) <= payload["inline_cap"]:
        record["stdout"] = text
    else:
        record["sha256"] = hashlib.sha256(normalised.encode()).hexdigest()
        record["head"] = text[:SHOWN]
    return record


def _frames(raw: bytes) -> list[dict]:
    messages, offset = [], 0
    while offset + 4 <= len(raw):
        size = int.from_bytes(raw[offset : offset + 4], "big")
        body = raw[offset + 4 : offset + 4 + size]
        offset += 4 + size
        try:
            message = json.loads(body)
        except ValueError:
            break
        if isinstance(message, dict):
            messages.append(message)
    return messages


def run_stdio(payload: dict, emit: Emit, alarm: Emit) -> None:
    emit(Event("loaded").to_json())
    for index, stdin_text in enumerate(payload["inputs"]):
        emit({"case": index, **run_case(payload, stdin_text, alarm)})
    emit(Event("done").to_json())


def run(payload: dict, emit: Emit, alarm: Emit) -> None:
    """The sandbox harness entry (`rlx.rewards.code.checker:run`)."""
    (run_stdio if payload["kind"] == "stdio" else run_program)(payload, emit, alarm)
