"""The checker of reward=unit_tests's code formats: trusted code in the trainer, talking to one sandbox session.

The candidate's program runs in its own process in the sandbox (rlx.rewards.sandbox.session, with the harness
rlx.rewards.unit_tests_harness); nothing here ever runs it, and nothing of it runs here.

`program` tests (assert lines, check(candidate) programs, unittest classes): the row's test program runs here,
as published, and every name it reads from the candidate's program is what the program bound to it once loaded:
data as a value (a constant), anything else (the function under test, `Solution`) as a `Remote`
(rlx.rewards.code.remote) driven through a `Client` (rlx.rewards.code.client): a call
sends the arguments (copies, refilled here when the candidate mutates them; callables stay here and are called
back), and what comes back is data built here. So the test's own `assert`s decide, on values whose `==` is
Python's or the test's: an always-equal object, a lying `__eq__`, `__hash__` or `__class__` never take part. An
exception the candidate raises is rebuilt as the built-in class the test catches (`except ValueError`,
`assertRaises`); an exit, a hang past the call timeout or a garbled reply ends the session, and no `except` in
the test turns that into a pass. Each `assert` (unittest assertion) is one test (a `site`); `run_program`
returns, per site, whether every run of it passed, or its first failure with the value got and the value
expected.

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

from rlx import syntax
from rlx.rewards.base import Status
from rlx.rewards.code.cases import Tests
from rlx.rewards.code.client import Client
from rlx.rewards.code.compare import Comparison
from rlx.rewards.code.deadline import Clock, with_ticks
from rlx.rewards.code.remote import CandidateAbort, CandidateRaised, Remote, SessionEnded, kind_of, label
from rlx.rewards.sandbox.session import Ended, Session

ENDED = {Status.TIMEOUT: "Timeout", Status.OOM: "MemoryError", Status.CRASH: "Exited", Status.VIOLATION: "Violation"}
STOPPED = (Exception, CandidateAbort, SystemExit)  # what ends a test step (the trainer's Ctrl-C is not)


def _ended_kind(error: SessionEnded) -> str:
    status = getattr(error, "status", None)
    return ENDED.get(status, error.kind) if status is not None else error.kind


class Sites:
    """Per-site bookkeeping the instrumented test program calls (rlx.rewards.code.program.Instrument)."""

    def __init__(self, count: int, comparison: Comparison, client: Client) -> None:
        self.count, self.comparison, self.client = count, comparison, client
        self.current: int | None = None
        self.reached: set[int] = set()
        self.failures: dict[int, dict] = {}
        # Whether a site tests the candidate at all: a call of the candidate happened since the previous site
        # ended (HumanEval's `assert True, "..."` lines make none: they are not tests, or an empty body would
        # earn a share of them under scoring=fraction).
        self.mark = 0
        self.involved: set[int] = set()

    def enter(self, site: int) -> None:
        self.current = site
        self.reached.add(site)

    def _done(self, site: int) -> None:
        if self.client.calls > self.mark:
            self.involved.add(site)
        self.mark, self.current = self.client.calls, None

    def check(self, site: int, ok) -> None:
        if not ok and site not in self.failures:
            self.failures[site] = {"test": site, "ok": False}
        self._done(site)

    def check_eq(self, site: int, got, expected) -> None:
        if not self.comparison.equal(got, expected) and site not in self.failures:
            self.failures[site] = {"test": site, "ok": False, "got": label(got), "expected": label(expected)}
        self._done(site)

    def check_apps(self, site: int, got, expected) -> None:
        """APPS's call-based comparison (its harness's leniency): a tuple result counts as a list (and a list of
        tuples as a list of lists), and an expected value published inside a one-item list matches that item."""
        if type(got) is tuple:
            got = list(got)
        if type(got) is list and got and all(type(item) is tuple for item in got):
            got = [list(item) for item in got]
        wrapped = type(expected) is list and len(expected) == 1
        if self.comparison.equal(got, expected) or (wrapped and self.comparison.equal(got, expected[0])):
            self._done(site)
            return
        self.check_eq(site, got, expected)

    def check_listed(self, site: int, got, expected) -> None:
        """LiveCodeBench's call-based comparison: a tuple result counts as a list, then Python's ==."""
        self.check_eq(site, list(got) if type(got) is tuple else got, expected)

    def abort(self, error: BaseException) -> None:
        """A step raised outside a comparison: the current site (if any) fails with the cause."""
        kind = _ended_kind(error) if isinstance(error, SessionEnded) else kind_of(error)
        detail = error.detail if isinstance(error, CandidateAbort) else str(error)[:300]
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
        if self.client.dead is not None:  # ended, even where the test swallowed it: the sample is labelled
            out.append({"event": "ended", "error": _ended_kind(self.client.dead), "detail": self.client.dead.detail})
        return out


_ABSENT = object()
RANDOM_METHODS = tuple(name for name in random.__all__ if callable(getattr(random.Random, name, None)))


@functools.lru_cache(maxsize=4096)
def _compiled(source: str, name: str) -> types.CodeType:
    """A test program's step, compiled once per distinct text (code objects are immutable: safe to share), with
    the ticks that hold the program's time limit in its loops and functions (rlx.rewards.code.deadline)."""
    ticked = with_ticks(source)
    return compile(ticked, name, "exec") if isinstance(ticked, str) else syntax.compile_tree(ticked, name)


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


def load(session: Session, tests: Tests) -> dict:
    """Load the program in the candidate's process: its reply ({"ok", "globals"}), or the load_error record."""
    request = {
        "op": "load",
        "code_from": tests.code_from,
        "names": tests.proxies,
        "classes": tests.classes,
        "preamble": tests.preamble,
        "execute": tests.format != "stdio",
    }
    loaded = session.request(request)[0]
    if loaded.get("ok") is True:
        return loaded
    return {"event": "load_error", "error": str(loaded.get("error"))[:80], "detail": str(loaded.get("detail"))[:300]}


def run_case(case_class: type, method: str) -> None:
    """One unittest test method, as unittest runs it: setUp, the method, tearDown."""
    case = case_class(method)
    case.setUp()
    try:
        getattr(case, method)()
    finally:
        case.tearDown()


def run_program(session: Session, tests: Tests, comparison: Comparison, timeout_s: float) -> list[dict]:
    """The records of one candidate against an assert-line, check(candidate) or unittest test program."""
    loaded = load(session, tests)
    if "event" in loaded:
        return [loaded]
    client = Client(session, timeout_s, {})
    sites = Sites(len(tests.labels), comparison, client)
    try:  # the candidate's names the test reads (one it lacks stays unbound: a NameError, as in one program)
        namespace: dict = client.globals(loaded.get("globals"), tests.proxies)
    except CandidateAbort as err:
        sites.abort(err)
        return [*sites.records(True), {"event": "done"}]
    theirs = dict(namespace)

    def standard(name: str) -> bool:
        """Whether a standard-library name the test reads is that module: the candidate left it unbound or bound
        it to a module (its own `import bisect`), not to a function of its own (`def bisect(...)`)."""
        value = theirs.get(name, _ABSENT)
        return value is _ABSENT or (isinstance(value, Remote) and value._type == "module")

    namespace |= {
        "__rlx_standard__": standard,
        "__name__": "__checker__",
        "__builtins__": private_builtins(),
        "__rlx_enter__": sites.enter,
        "__rlx_assert__": sites.check,
        "__rlx_assert_eq__": sites.check_eq,
        "__rlx_assert_apps__": sites.check_apps,
        "__rlx_assert_listed__": sites.check_listed,
        "__rlx_unittest__": run_case,
        "__rlx_tick__": Clock(session.wall_deadline, client),  # the test's own loops stop at the time limit
    }
    try:
        exec(_compiled(tests.setup, "<setup>"), namespace)
    except CandidateAbort as err:  # the test's setup called the candidate, which ended (or time ran out)
        sites.abort(err)
        return [*sites.records(True), {"event": "done"}]
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the row's own code: a dataset error, not the candidate's
        if isinstance(err, CandidateRaised):  # unless the candidate raised it, in a call the setup made
            sites.abort(err)
            return [*sites.records(True), {"event": "done"}]
        return [{"event": "setup_error", "error": type(err).__name__, "detail": str(err)[:300]}]
    client.classes.update((n, namespace[n]) for n in tests.classes if isinstance(namespace.get(n), type))
    aborted = False
    for step in tests.steps:
        try:
            exec(_compiled(step, "<test>"), namespace)
        except STOPPED as err:  # the test program stopped: its current assert fails
            sites.abort(err)
            aborted = True
        if client.dead is not None:  # the session ended (or its time is over): nothing later can pass
            aborted = True
            break
    return [*sites.records(aborted), {"event": "done"}]


def run_stdio(session: Session, tests: Tests, timeout_s: float) -> list[dict]:
    """The records of one program over the stdin/stdout cases: what it printed, or why it did not finish."""
    loaded = load(session, tests)
    if "event" in loaded:
        return [loaded]
    records: list[dict] = []
    for index, stdin in enumerate(tests.inputs):
        try:
            reply = session.request({"op": "stdio", "stdin": stdin}, timeout_s=timeout_s)[0]
        except Ended as err:
            records.append(
                {"case": index, "error": ENDED.get(err.status, err.status.value), "detail": err.reason[:300]}
            )
            records += [{"case": i, "error": "NotRun"} for i in range(index + 1, len(tests.inputs))]
            break
        error = reply.get("error")
        code = reply.get("exit_code")
        record: dict = {"case": index, "stdout": str(reply.get("stdout", "")), "exit": code if type(code) is int else 0}
        if error is not None:
            record["error"] = str(error)[:80]
        records.append(record)
    return [*records, {"event": "done"}]
