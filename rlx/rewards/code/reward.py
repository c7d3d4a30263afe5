"""reward=unit_tests: the completion's code against the row's tests, in the published formats (formats.py).

The code runs in the sandbox (rlx.rewards.sandbox.session) in its own process; the row's test program runs here,
in the trainer, against a proxy that receives only plain data (rlx.rewards.code.checker), and stdin/stdout
outputs are compared here too: expected values never enter the sandbox.

Scoring: `scoring=fraction` gives the share of tests passed (FAIL below 1), `all` gives 1 only when all pass
(HumanEval's own metric; a row's `scoring` field overrides the reward's).
Each test's verdict is in `details.tests`; the first failing one, with the value got, in `details.first_failure`.
The value expected (and the test's text, which quotes it) stays out of a training run's verdicts (issue 26:
nothing secret in run outputs); `rlx.score`, the user's own evaluator, sets `show_expected` to report it.
Components (logged as `reward/<name>`): `pass_frac`, `valid` (the code loaded and
the tests ran to the end) and `correct` (every test passed). A timed-out call or case makes the sample TIMEOUT
(0), a MemoryError OOM (0); loading errors are CRASH (FORMAT for a SyntaxError) with the module and cause named
for an import that only fails in the sandbox (`import_problem`). This process never parses the completion.
"""

from __future__ import annotations

import importlib.util
import logging

from rlx.rewards.base import Reward, Status, Verdict
from rlx.rewards.code.cases import RowError, Tests
from rlx.rewards.code.checker import run_program, run_stdio
from rlx.rewards.code.compare import OUTPUT_MODES, Comparison, outputs_match
from rlx.rewards.code.formats import CODE_FROM, FORMATS, candidate_code, parse
from rlx.rewards.sandbox.session import Failure, Limits, Sandbox, Session

HARNESS = "rlx.rewards.unit_tests_harness"  # the sandbox's own: load, call, stdio (SANDBOX_API.md)
MODULES = (
    "rlx.syntax",
    "rlx.rewards.sandbox.value_sizes",
    "rlx.rewards.sandbox.values",
    "rlx.rewards.code.extract",
    "rlx.rewards.code.console",
)  # copied into the jail for the harness
log = logging.getLogger(__name__)
ENDED_STATUS = {"Timeout": Status.TIMEOUT, "MemoryError": Status.OOM, "Violation": Status.VIOLATION}


def components(pass_frac: float, valid: bool) -> dict[str, float]:
    return {"pass_frac": pass_frac, "valid": float(valid), "correct": float(valid and pass_frac == 1.0)}


def import_problem(detail: str) -> str:
    """Why `No module named 'x'` happens only in the sandbox: x is installed here, but the sandbox binds only
    the interpreter's own library and the distributions in reward.packages."""
    name = detail.partition("No module named ")[2].strip("'\"").split(".")[0]
    spec = importlib.util.find_spec(name) if name.isidentifier() else None
    if spec is None or not spec.origin:
        return ""
    return (
        f" (module {name!r} is installed at {spec.origin}, outside what the sandbox binds: the interpreter's "
        f"own library and reward.packages; add its distribution to reward.packages)"
    )


class CodeTestsReward(Reward):
    required_fields: tuple[str, ...] = ()  # formats differ per row: `row_problem` checks each row at start
    show_expected: bool = False  # verdicts carry the expected value and the test's text (set by rlx.score only)

    def __init__(
        self,
        workers: int,
        scoring: str,
        limits: dict,
        base_uid: int,
        packages: list[str] = (),  # type: ignore[assignment]
        format: str = "auto",
        code_from: str = "completion",
        compare: str = "python",
        rel_tol: float = 0.0,
        abs_tol: float = 0.0,
        output: str = "strip",
        call_timeout_s: float = 2.0,
        case_timeout_s: float = 2.0,
        invalid_rows: str = "stop",
    ) -> None:
        """packages: site-packages distributions the candidate may import (bound read-only in the sandbox).
        Refuses to start (SandboxUnavailable, one line) where no sandbox can be built."""
        for key, value, allowed in (
            ("scoring", scoring, ("fraction", "all")),
            ("format", format, ("auto", *FORMATS)),
            ("code_from", code_from, CODE_FROM),
            ("output", output, OUTPUT_MODES),
            ("invalid_rows", invalid_rows, ("stop", "drop")),
        ):
            if value not in allowed:
                raise ValueError(f"reward.{key} must be one of {allowed} (got {value!r})")
        self.scoring, self.format, self.code_from, self.output = scoring, format, code_from, output
        self.invalid_rows = invalid_rows
        self.comparison = Comparison(compare, rel_tol, abs_tol)
        self.call_timeout_s, self.case_timeout_s = call_timeout_s, case_timeout_s
        self._parsed: dict[int, tuple[dict, Tests]] = {}
        self.sandbox = Sandbox(
            HARNESS, workers, Limits(**limits), modules=MODULES, packages=tuple(packages), base_uid=base_uid
        )

    def row_problem(self, row: dict) -> str | None:
        """What is wrong with a row's tests (None: they parse); rlx.checks.check_task runs it on every row."""
        if row.get("scoring", self.scoring) not in ("fraction", "all"):
            return f"scoring must be 'fraction' or 'all' (got {row['scoring']!r})"
        try:
            self.tests(row)
        except RowError as err:
            return str(err)
        return None

    def tests(self, row: dict) -> Tests:
        """The row's parsed tests, kept per row object (checked at start, reused at every step)."""
        kept = self._parsed.get(id(row))
        if kept is None or kept[0] is not row:  # the row is held too, so its id cannot be reused meanwhile
            kept = self._parsed[id(row)] = (row, parse(row, self.format, self.code_from))
        return kept[1]

    def check(self, session: Session, tests: Tests) -> list[dict]:
        if tests.format == "stdio":
            return run_stdio(session, tests, self.case_timeout_s)
        return run_program(session, tests, self.comparison, self.call_timeout_s)

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        tests = [self.tests(row) for row in rows]  # rows were checked at start: raises only on a bug
        programs = [candidate_code(c, row, self.code_from) for c, row in zip(completions, rows, strict=True)]
        outcomes = self.sandbox.map(programs, lambda session, i: self.check(session, tests[i]))
        verdicts = [
            self.decide(outcome, t, row.get("scoring", self.scoring))
            for outcome, t, row in zip(outcomes, tests, rows, strict=True)
        ]
        for verdict in verdicts:
            if verdict.status == Status.INFRA:
                log.warning("sandbox: %s; the sample is INFRA", verdict.details.get("reason"))
        return verdicts

    def decide(self, outcome: list[dict] | Failure, tests: Tests, scoring: str) -> Verdict:
        """Verdict from the checker's records, or how the candidate's session ended (pure: testable alone)."""
        if isinstance(outcome, Failure):
            facts = {
                "wall_s": outcome.facts.wall_s,
                "cpu_s": outcome.facts.cpu_s,
                "output_tail": outcome.facts.output_tail,
            }
            return Verdict(0.0, outcome.status, components(0.0, False), {**facts, "reason": outcome.reason})
        records = outcome
        load = next((r for r in records if r.get("event") == "load_error"), None)
        if load is not None:
            error, detail = str(load.get("error")), str(load.get("detail", ""))
            status = Status.FORMAT if error in ("SyntaxError", "IndentationError", "TabError") else Status.CRASH
            status = Status.OOM if error == "MemoryError" else status
            reason = f"loading the code raised {error}" + (f": {detail}{import_problem(detail)}" if detail else "")
            return Verdict(0.0, status, components(0.0, False), {"reason": reason})
        setup = next((r for r in records if r.get("event") == "setup_error"), None)
        if setup is not None:
            reason = f"the row's own test code raised {setup.get('error')}: {setup.get('detail')} (a dataset error)"
            return Verdict(0.0, Status.INFRA, components(0.0, False), {"reason": reason})
        outcomes = self._outcomes(records, tests)
        if not outcomes:  # every assert passed without calling the function under test: it tested nothing
            outcomes = [{"test": -1, "label": "(the test program)", "ok": False, "error": "NeverCalled"}]
        passed = sum(o["ok"] for o in outcomes)
        fraction = passed / len(outcomes)
        if not self.show_expected:
            outcomes = [{k: v for k, v in o.items() if k not in ("expected", "label")} for o in outcomes]
        failures = [o for o in outcomes if not o["ok"]]
        details: dict = {"n_tests": len(outcomes), "passed": passed, "tests": outcomes}
        if failures:
            details["first_failure"] = failures[0]
        ended = next((r for r in records if r.get("event") == "ended"), None)
        if ended is not None:  # the session ended (even where the test caught that): a labelled zero
            details["reason"] = f"the candidate's session ended ({ended.get('error')}): {ended.get('detail', '')}"
            status = ENDED_STATUS.get(str(ended.get("error")), Status.CRASH)
            return Verdict(0.0, status, components(fraction, False), details)
        if not failures:
            return Verdict(1.0, Status.PASS, components(1.0, True), details)
        errors = {o.get("error") for o in failures}
        for error, status in (
            ("Timeout", Status.TIMEOUT),
            ("MemoryError", Status.OOM),
            ("Violation", Status.VIOLATION),
        ):
            if error in errors:
                return Verdict(0.0, status, components(fraction, False), details)
        if "Exited" in errors:  # the candidate's process ended mid-test (os._exit, a signal): it crashed
            return Verdict(0.0, Status.CRASH, components(fraction, False), details)
        reward = fraction if scoring == "fraction" else 0.0
        return Verdict(reward, Status.FAIL, components(fraction, True), details)

    def _outcomes(self, records, tests: Tests) -> list[dict]:
        """One verdict per test, in order; a test without a well-formed record fails."""
        key = "case" if tests.format == "stdio" else "test"
        seen = {r[key]: r for r in records if type(r.get(key)) is int}
        aborted = next((r for r in records if r.get("event") == "aborted"), None)
        stopped = None  # the program raised outside every assert after reaching them all: it failed, as in Python
        if aborted is not None:  # the program stopped outside an assert: say why at the first unreached one
            first = next((i for i, r in sorted(seen.items()) if r.get("error") == "NotReached"), None)
            failure = {"ok": False, "error": str(aborted.get("error"))[:80], "detail": str(aborted.get("detail"))[:300]}
            if first is not None:
                seen[first] = {**seen[first], **failure}
            else:
                stopped = {"test": -1, "label": "(the test program)", **failure}
        outcomes = []
        for index, label in enumerate(tests.labels):
            record = seen.get(index)
            outcome: dict = {"test": index, "label": label[:200]}
            if record is None:
                outcomes.append({**outcome, "ok": False, "error": "NoRecord"})
            elif tests.format == "stdio":
                outcomes.append({**outcome, **self._case(record, tests.outputs[index], tests.output or self.output)})
            elif record.get("counts") is not False or record.get("ok") is not True:  # else: not a test
                kept = {k: str(record[k])[:300] for k in ("got", "expected", "error", "detail") if k in record}
                outcomes.append({**outcome, "ok": record.get("ok") is True, **kept})
        return outcomes if stopped is None else [*outcomes, stopped]

    def _case(self, record: dict, expected: str, output: str) -> dict:
        if "error" in record:
            return {"ok": False, "error": str(record["error"])[:80], "detail": str(record.get("detail", ""))[:300]}
        if record.get("exit") != 0:
            return {"ok": False, "error": "NonZeroExit", "detail": f"exit status {record.get('exit')}"}
        got = str(record.get("stdout", ""))
        if outputs_match(got, expected, output, self.comparison):
            return {"ok": True}
        return {"ok": False, "got": got[:200], "expected": expected[:200]}

    def close(self) -> None:
        self.sandbox.close()
