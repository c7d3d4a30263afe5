"""The checker of reward=unit_tests's code formats: trusted code in the trainer, talking to one sandbox session.

The candidate's program runs in its own process in the sandbox (rlx.rewards.sandbox.session, with the harness
rlx.rewards.unit_tests_harness); nothing here ever runs it. What comes back is plain data only.

`program` tests (assert lines, check(candidate) programs): the row's test program runs here with each function
under test bound to a `Proxy`. Calling it sends the arguments to the candidate's process, which calls the real
function and answers with the value as plain data; the test's own `assert`s then compare values rebuilt here,
under the row's comparison semantics (rlx.rewards.code.compare). An object with an always-true `__eq__` cannot
cross (refused as unencodable); a candidate that exits early, hangs past the call timeout or garbles the
channel fails the calls it did not answer. Each `assert` is one test (a `site`); `run_program` returns, per site,
whether every run of it passed, or its first failure with the value got and the value expected.

The test program is the dataset's code, run in the trainer: it gets its own `random` module (seeded 0, so a
check that draws random inputs gives the same verdict every time and leaves the trainer's random state alone).

`stdio` tests: each case sends its input; the program's output comes back and is compared by the reward
(rlx.rewards.code.reward) with the expected output, which never leaves this process.
"""

from __future__ import annotations

import builtins
import functools
import random
import types

from rlx.rewards.base import Status
from rlx.rewards.code.compare import Comparison
from rlx.rewards.code.formats import Tests
from rlx.rewards.sandbox.session import Ended, Session
from rlx.rewards.sandbox.values import Unencodable, decode, encode

SHOWN = 200  # characters of a value shown in a failure record
ENDED = {Status.TIMEOUT: "Timeout", Status.OOM: "MemoryError", Status.CRASH: "Exited", Status.VIOLATION: "Violation"}


class CandidateFailure(Exception):
    """A call the candidate did not answer with a value: it raised (`kind` = its exception type), timed out,
    exited, returned something that is not plain data, or ran out of memory."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail = kind, detail


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _ended(err: Ended) -> CandidateFailure:
    return CandidateFailure(ENDED.get(err.status, err.status.value), err.reason[:300])


class Candidate:
    """The checker's end of the candidate's session: one call at a time, each with a deadline."""

    def __init__(self, session: Session, timeout_s: float) -> None:
        self.session, self.timeout_s = session, timeout_s
        self.dead: CandidateFailure | None = None
        self.calls = 0

    def call(self, name: str, args: tuple, kwargs: dict):
        if self.dead is not None:
            raise self.dead
        self.calls += 1
        try:
            request = {
                "op": "call",
                "name": name,
                "args": [encode(a) for a in args],
                "kwargs": [[k, encode(v)] for k, v in kwargs.items()],
            }
        except Unencodable as err:
            raise CandidateFailure("ArgumentNotPlain", f"the test passes {err}: only plain data crosses") from None
        try:
            reply = self.session.request(request, timeout_s=self.timeout_s)[0]
        except Ended as err:
            self.dead = _ended(err)
            raise self.dead from None
        if "error" in reply:
            raise CandidateFailure(str(reply["error"])[:80], str(reply.get("detail", ""))[:300])
        try:
            return decode(reply.get("value"))
        except (ValueError, OverflowError) as err:
            raise CandidateFailure("Garbled", str(err)[:300]) from None


class Proxy:
    """Stands for the function under test in the checker's namespace; returns plain data only."""

    def __init__(self, candidate: Candidate, name: str) -> None:
        self._candidate, self._name = candidate, name

    def __call__(self, *args, **kwargs):
        return self._candidate.call(self._name, args, kwargs)


class Sites:
    """Per-assert bookkeeping the instrumented test program calls (rlx.rewards.code.formats.instrument)."""

    def __init__(self, count: int, comparison: Comparison, candidate: Candidate) -> None:
        self.count, self.comparison, self.candidate = count, comparison, candidate
        self.current: int | None = None
        self.reached: set[int] = set()
        self.failures: dict[int, dict] = {}
        # Whether an assert tests the candidate at all: a call of the function under test happened since the
        # previous assert ended (HumanEval's `assert True, "..."` lines make none: they are not tests, or an
        # empty body would earn a share of them under scoring=fraction).
        self.mark = 0
        self.involved: set[int] = set()

    def enter(self, site: int) -> None:
        self.current = site
        self.reached.add(site)

    def _done(self, site: int) -> None:
        if self.candidate.calls > self.mark:
            self.involved.add(site)
        self.mark, self.current = self.candidate.calls, None

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
        if self.current is not None:
            self.failures.setdefault(self.current, {"test": self.current, **failure})
        else:
            self.failures.setdefault(-1, {"test": -1, **failure})
        self.current = None

    def records(self, aborted: bool) -> list[dict]:
        out = []
        for site in range(self.count):
            if site in self.failures:
                out.append(self.failures[site])
            elif site in self.reached and site not in self.involved:
                out.append({"test": site, "ok": True, "counts": False})  # passed without calling the candidate
            elif site in self.reached or not aborted:
                out.append({"test": site, "ok": True})
            else:
                out.append({"test": site, "ok": False, "error": "NotReached", "detail": "the test stopped earlier"})
        if -1 in self.failures:
            out.append({"event": "aborted", **{k: v for k, v in self.failures[-1].items() if k != "test"}})
        return out


RANDOM_METHODS = tuple(name for name in random.__all__ if callable(getattr(random.Random, name, None)))


@functools.lru_cache(maxsize=4096)
def _compiled(source: str, name: str) -> types.CodeType:
    """A test program's step, compiled once per distinct text (code objects are immutable: safe to share)."""
    return compile(source, name, "exec")


def private_builtins() -> dict:
    """Builtins whose `import random` gives a module of its own, seeded 0 (the trainer's stays untouched)."""
    own = types.ModuleType("random")
    own.__dict__.update(random.__dict__)
    generator = random.Random(0)
    own.__dict__.update({name: getattr(generator, name) for name in RANDOM_METHODS})
    real = builtins.__import__

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        return own if name == "random" and level == 0 else real(name, globals, locals, fromlist, level)

    return {**builtins.__dict__, "__import__": import_}


def load(session: Session) -> dict | None:
    """Load the program in the candidate's process; the load_error record when that raised."""
    loaded = session.request({"op": "load"})[0]
    if loaded.get("ok") is True:
        return None
    return {"event": "load_error", "error": str(loaded.get("error"))[:80], "detail": str(loaded.get("detail"))[:300]}


def run_program(session: Session, tests: Tests, comparison: Comparison, timeout_s: float) -> list[dict]:
    """The records of one candidate against an assert-line or check(candidate) test program."""
    failed = load(session)
    if failed is not None:
        return [failed]
    candidate = Candidate(session, timeout_s)
    sites = Sites(len(tests.labels), comparison, candidate)
    namespace: dict = {
        "__name__": "__checker__",
        "__builtins__": private_builtins(),
        "__rlx_enter__": sites.enter,
        "__rlx_assert__": sites.check,
        "__rlx_assert_eq__": sites.check_eq,
        "__rlx_proxy__": lambda name: Proxy(candidate, name),
    }
    try:
        exec(_compiled(tests.setup, "<setup>"), namespace)
    except Exception as err:  # noqa: BLE001 - the row's own code: a dataset error, not the candidate's
        return [{"event": "setup_error", "error": type(err).__name__, "detail": str(err)[:300]}]
    for name in tests.proxies:
        namespace[name] = Proxy(candidate, name)
    aborted = False
    for step in tests.steps:
        try:
            exec(_compiled(step, "<test>"), namespace)
        except Exception as err:  # noqa: BLE001 - the test program stopped: its current assert fails
            sites.abort(err)
            aborted = True
    return [*sites.records(aborted), {"event": "done"}]


def run_stdio(session: Session, tests: Tests, timeout_s: float) -> list[dict]:
    """The records of one program over the stdin/stdout cases: what it printed, or why it did not finish."""
    records: list[dict] = []
    for index, stdin in enumerate(tests.inputs):
        try:
            reply = session.request({"op": "stdio", "stdin": stdin}, timeout_s=timeout_s)[0]
        except Ended as err:
            failure = _ended(err)
            records.append({"case": index, "error": failure.kind, "detail": failure.detail})
            records += [{"case": i, "error": "NotRun"} for i in range(index + 1, len(tests.inputs))]
            break
        error = reply.get("error")
        if index == 0 and error in ("SyntaxError", "IndentationError", "TabError"):
            return [{"event": "load_error", "error": error, "detail": ""}]
        code = reply.get("exit_code")
        record: dict = {"case": index, "stdout": str(reply.get("stdout", "")), "exit": code if type(code) is int else 0}
        if error is not None:
            record["error"] = str(error)[:80]
        records.append(record)
    return [*records, {"event": "done"}]
