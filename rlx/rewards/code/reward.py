"""reward=unit_tests: the completion's code against the row's tests, in the published formats (formats.py).

The code runs in the sandbox (rlx.rewards.sandbox) in its own process; the row's test program runs in a
checker process beside it that receives only plain data (rlx.rewards.code.checker), and stdin/stdout outputs
are compared here, outside the sandbox, with expected outputs that never enter it.

Scoring: `scoring=fraction` gives the share of tests passed (FAIL below 1), `all` gives 1 only when all pass
(HumanEval's own metric; a row's `scoring` field overrides the reward's).
Each test's verdict is in `details.tests`; the first failing one, with the value got and the value expected,
in `details.first_failure`. Components (logged as `reward/<name>`): `pass_frac`, `valid` (the code loaded and
the tests ran to the end) and `correct` (every test passed). A timed-out call or case makes the sample TIMEOUT
(0), a MemoryError OOM (0); loading errors are CRASH (FORMAT for a SyntaxError) with the module and cause named
for an import that only fails in the sandbox (`import_problem`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from dataclasses import asdict, replace

from rlx.rewards.base import Status, Verdict
from rlx.rewards.code.compare import OUTPUT_MODES, Comparison, normalise_output, outputs_match
from rlx.rewards.code.formats import CODE_FROM, FORMATS, RowError, Tests, candidate_code, parse
from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.pool import REPO_ROOT, SandboxPool
from rlx.rewards.sandbox.records import RunResult, events
from rlx.rewards.verdicts import run_status

HARNESS = "rlx.rewards.code.checker:run"
INLINE_OUTPUT = 16_384  # stdout longer than this (normalised) comes back as its sha256


def components(pass_frac: float, valid: bool) -> dict[str, float]:
    return {"pass_frac": pass_frac, "valid": float(valid), "correct": float(valid and pass_frac == 1.0)}


def import_problem(detail: str) -> str:
    """Why `No module named 'x'` happens only in the sandbox: x exists here but the sandbox uid cannot read it."""
    name = detail.partition("No module named ")[2].strip("'\"").split(".")[0]
    spec = importlib.util.find_spec(name) if name.isidentifier() else None
    if spec is None or not spec.origin:
        return ""
    blocked = next(
        (d for d in _parents(spec.origin) if os.path.isdir(d) and not os.stat(d).st_mode & 0o005),
        None,
    )
    where = f"{blocked} is not readable by other users" if blocked else "its file is not readable by the sandbox uid"
    return (
        f" (module {name!r} is installed at {spec.origin}, but {where}: the sandbox's uid cannot import it; add "
        f"{name} to reward.preload, which imports it once before the sandbox drops privileges)"
    )


def _parents(path: str) -> list[str]:
    parts, out = os.path.dirname(path), []
    while parts not in ("/", ""):
        out.append(parts)
        parts = os.path.dirname(parts)
    return out[::-1]


class CodeTestsReward:
    required_fields: tuple[str, ...] = ()  # formats differ per row: `row_problem` checks each row at start

    def __init__(
        self,
        workers: int,
        scoring: str,
        limits: dict,
        hide: list[str],
        base_uid: int,
        preload: list[str],
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
        """preload: stdlib modules imported once in each sandbox server (candidates can use them even where the
        interpreter's own files are unreadable to the sandbox uid, e.g. a root-only pyenv)."""
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
        self.limits = Limits(**limits)
        self._parsed: dict[int, tuple[dict, Tests]] = {}
        self.pool = SandboxPool(
            workers, preload=("rlx.rewards.code.checker", *preload), env={}, hide=tuple(hide), base_uid=base_uid
        )

    def protect(self, directories: list[str]) -> list[str]:
        """Also mount these directories empty in every sandbox (a dataset's directory: its canonical solutions
        and tests must not be readable by a candidate), except one that holds the interpreter or rlx itself,
        which the sandbox server needs; returns the directories hidden."""
        needed = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, REPO_ROOT)]
        added = [
            d
            for d in map(os.path.realpath, directories)
            if os.path.isdir(d) and not any(n == d or n.startswith(d + os.sep) for n in needed)
        ]
        self.pool.hide = tuple(dict.fromkeys([*self.pool.hide, *added]))
        return added

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

    def request(self, code: str, tests: Tests) -> tuple[str, dict, Limits]:
        if tests.format == "stdio":
            payload = {
                "kind": "stdio",
                "code": code,
                "inputs": tests.inputs,
                "case_timeout_s": self.case_timeout_s,
                "normalise": self.output,
                "inline_cap": INLINE_OUTPUT,
                "output_cap": max(1 << 20, 4 * max(len(o) for o in tests.outputs)),
            }
            wall = self.limits.wall_s + len(tests.inputs) * self.case_timeout_s
        else:
            payload = {
                "kind": "program",
                "code": code,
                "setup": tests.setup,
                "steps": tests.steps,
                "proxies": tests.proxies,
                "sites": len(tests.labels),
                "compare": asdict(self.comparison),
                "call_timeout_s": self.call_timeout_s,
            }
            wall = self.limits.wall_s
        return HARNESS, payload, replace(self.limits, wall_s=wall)

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(completions)
        jobs, slots, parsed, scorings = [], [], [], []
        for index, (completion, row) in enumerate(zip(completions, rows, strict=True)):
            tests = self.tests(row)  # rows were checked at start: raises only on a bug
            code = candidate_code(completion, row, self.code_from)
            try:
                ast.parse(code)
            except (SyntaxError, ValueError) as err:
                verdicts[index] = Verdict(
                    0.0, Status.FORMAT, components(0.0, False), {"reason": f"does not parse: {err}"}
                )
                continue
            jobs.append(self.request(code, tests))
            slots.append(index)
            parsed.append(tests)
            scorings.append(row.get("scoring", self.scoring))
        for index, result, tests, scoring in zip(slots, self.pool.run(jobs), parsed, scorings, strict=True):
            verdicts[index] = self.decide(result, tests, scoring)
        done = [v for v in verdicts if v is not None]
        assert len(done) == len(verdicts), "every completion has a verdict: FORMAT above or the sandbox's"
        return done

    def decide(self, result: RunResult, tests: Tests, scoring: str) -> Verdict:
        """Verdict from a sandbox result (pure given the result: testable without a sandbox)."""
        status, why = run_status(result)
        base = {"wall_s": result.wall_s, "cpu_s": result.cpu_s, "output_tail": result.output_tail}
        if status is not None:
            load = next((r for r in result.records if r.get("event") == "load_error"), None)
            if load is not None and isinstance(load.get("detail"), str) and load["detail"]:
                why = f"{why}: {load['detail']}{import_problem(load['detail'])}"
            return Verdict(0.0, status, components(0.0, False), {**base, "reason": why})
        setup = next((r for r in result.records if r.get("event") == "setup_error"), None)
        if setup is not None:
            reason = f"the row's own test code raised {setup.get('error')}: {setup.get('detail')} (a dataset error)"
            return Verdict(0.0, Status.INFRA, components(0.0, False), {**base, "reason": reason})
        outcomes = self._outcomes(result.records, tests)
        if not outcomes:  # every assert passed without calling the function under test: it tested nothing
            outcomes = [{"test": -1, "label": "(the test program)", "ok": False, "error": "NeverCalled"}]
        passed = sum(o["ok"] for o in outcomes)
        fraction = passed / len(outcomes)
        failures = [o for o in outcomes if not o["ok"]]
        details = {**base, "n_tests": len(outcomes), "passed": passed, "tests": outcomes}
        if failures:
            details["first_failure"] = failures[0]
        if not any(e.kind == "done" for e in events(result.records)):
            reason = f"ended before the tests finished (exit code {result.exit_code})"
            return Verdict(0.0, Status.CRASH, components(fraction, False), {**details, "reason": reason})
        if not failures:
            return Verdict(1.0, Status.PASS, components(1.0, True), details)
        errors = {o.get("error") for o in failures}
        if "Timeout" in errors:
            return Verdict(0.0, Status.TIMEOUT, components(fraction, False), details)
        if "MemoryError" in errors:
            return Verdict(0.0, Status.OOM, components(fraction, False), details)
        reward = fraction if scoring == "fraction" else 0.0
        return Verdict(reward, Status.FAIL, components(fraction, True), details)

    def _outcomes(self, records, tests: Tests) -> list[dict]:
        """One verdict per test, in order; a test without a well-formed record fails."""
        key = "case" if tests.format == "stdio" else "test"
        seen = {r[key]: r for r in records if type(r.get(key)) is int}
        aborted = next((r for r in records if r.get("event") == "aborted"), None)
        if aborted is not None:  # the program stopped before its first assert: say why at the first unreached one
            first = next((i for i, r in sorted(seen.items()) if r.get("error") == "NotReached"), None)
            if first is not None:
                seen[first] = {**seen[first], "error": aborted.get("error"), "detail": aborted.get("detail")}
        outcomes = []
        for index, label in enumerate(tests.labels):
            record = seen.get(index)
            outcome: dict = {"test": index, "label": label[:200]}
            if record is None:
                outcomes.append({**outcome, "ok": False, "error": "NoRecord"})
            elif tests.format == "stdio":
                outcomes.append({**outcome, **self._case(record, tests.outputs[index])})
            elif record.get("counts") is not False or record.get("ok") is not True:  # else: not a test
                kept = {k: str(record[k])[:300] for k in ("got", "expected", "error", "detail") if k in record}
                outcomes.append({**outcome, "ok": record.get("ok") is True, **kept})
        return outcomes

    def _case(self, record: dict, expected: str) -> dict:
        shown = {"expected": expected[:200]}
        if "error" in record:
            return {"ok": False, "error": str(record["error"])[:80], "detail": str(record.get("detail", ""))[:300]}
        if record.get("exit") != 0:
            return {"ok": False, "error": "NonZeroExit", "detail": f"exit status {record.get('exit')}"}
        if isinstance(record.get("stdout"), str):
            got = record["stdout"]
            ok = outputs_match(got, expected, self.output, self.comparison)
            return {"ok": ok} if ok else {"ok": False, "got": got[:200], **shown}
        digest = hashlib.sha256(normalise_output(expected, self.output).encode()).hexdigest()
        ok = record.get("sha256") == digest
        return {"ok": ok} if ok else {"ok": False, "got": str(record.get("head", ""))[:200], **shown}

    def close(self) -> None:
        self.pool.close()
