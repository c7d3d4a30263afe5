"""reward=unit_tests: the completion's code runs against the row's tests in the sandbox.

Row fields: `tests`, a list of either assert strings (`"assert add(1, 2) == 3"`, the MBPP/HumanEval form)
or objects `{"input": [args...], "output": value}` together with the row's `entry_point` (function name).
Each test is split, outside the sandbox, into a call expression (sent in) and an expected value (kept out);
the sandbox returns exact-type encodings of the call results and this process compares them.

Scoring: `scoring=fraction` gives the share of tests passed (FAIL below 1), `scoring=all` gives 1 only when
all pass. TIMEOUT, CRASH, OOM and VIOLATION score 0 whatever passed before; INFRA is excluded upstream.
Components (logged as `reward/<name>`): `pass_frac` (share of tests passed), `valid` (1 when the code parsed
and the harness ran to the end: PASS or FAIL, not FORMAT, CRASH, TIMEOUT, OOM or VIOLATION) and `correct`
(1 when every test passed).
"""

from __future__ import annotations

import ast
import re

from rlx.rewards.base import Status, Verdict
from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.pool import SandboxPool
from rlx.rewards.sandbox.records import CallOutcome, RunResult, events
from rlx.rewards.sandbox.values import encode, matches
from rlx.rewards.verdicts import run_status

HARNESS = "rlx.rewards.unit_tests_harness:run"
FENCE = re.compile(r"```(?:python|py)?\n(.*?)```", re.DOTALL)


def extract_code(completion: str) -> str:
    """The last fenced code block if the completion has one, else the whole completion."""
    blocks = FENCE.findall(completion)
    return blocks[-1] if blocks else completion


def parse_tests(row: dict) -> list[tuple[str, object]]:
    """(call expression, expected value) per test; a malformed test is a dataset error, raised loudly."""
    parsed = []
    for number, test in enumerate(row["tests"]):
        if isinstance(test, str):
            tree = ast.parse(test.strip())
            node = tree.body[0] if len(tree.body) == 1 else None
            compare = getattr(node, "test", None)
            if not (
                isinstance(node, ast.Assert)
                and isinstance(compare, ast.Compare)
                and len(compare.ops) == 1
                and isinstance(compare.ops[0], ast.Eq)
            ):
                raise ValueError(f"tests[{number}] must be `assert <call> == <literal>` (got {test!r})")
            parsed.append((ast.unparse(compare.left), ast.literal_eval(compare.comparators[0])))
        elif isinstance(test, dict) and {"input", "output"} <= set(test):
            if "entry_point" not in row:
                raise ValueError(f"tests[{number}] is an input/output test: the row needs an `entry_point` field")
            args = ", ".join(repr(arg) for arg in test["input"])
            parsed.append((f"{row['entry_point']}({args})", test["output"]))
        else:
            raise ValueError(f"tests[{number}] must be an assert string or {{'input': [...], 'output': ...}}")
    if not parsed:
        raise ValueError("row has an empty `tests` list")
    return parsed


def components(pass_frac: float, valid: bool) -> dict[str, float]:
    return {"pass_frac": pass_frac, "valid": float(valid), "correct": float(valid and pass_frac == 1.0)}


def decide(result: RunResult, expected: list, scoring: str) -> Verdict:
    """Verdict from a sandbox result and the expected encodings (pure: no sandbox, easy to test)."""
    status, why = run_status(result)
    base = {"wall_s": result.wall_s, "cpu_s": result.cpu_s, "output_tail": result.output_tail}
    if status is not None:
        return Verdict(0.0, status, components(0.0, False), {**base, "reason": why})
    first: dict[int, CallOutcome] = {}
    for outcome in (CallOutcome.parse(r) for r in result.records):
        if outcome is not None and outcome.test not in first:
            first[outcome.test] = outcome
    passed = [i for i, exp in enumerate(expected) if i in first and matches(first[i].value, exp)]
    fraction = len(passed) / len(expected)
    details = {
        **base,
        "passed": passed,
        "n_tests": len(expected),
        "errors": {i: o.error for i, o in first.items() if o.error is not None},
    }
    if fraction == 1.0:
        return Verdict(1.0, Status.PASS, components(1.0, True), details)
    if not any(e.kind == "done" for e in events(result.records)):
        return Verdict(
            0.0,
            Status.CRASH,
            components(fraction, False),
            {**details, "reason": f"ended before the tests finished (exit code {result.exit_code})"},
        )
    reward = fraction if scoring == "fraction" else 0.0
    return Verdict(reward, Status.FAIL, components(fraction, True), details)


class UnitTestsReward:
    required_fields = ("tests",)

    def __init__(
        self, workers: int, scoring: str, limits: dict, hide: list[str], base_uid: int, preload: list[str]
    ) -> None:
        """preload: stdlib modules imported once in the sandbox server; candidates can always use those
        even where the interpreter's own files are unreadable to the sandbox uid (e.g. a root-only pyenv)."""
        if scoring not in ("fraction", "all"):
            raise ValueError(f"reward.scoring must be 'fraction' or 'all' (got {scoring!r})")
        self.scoring = scoring
        self.limits = Limits(**limits)
        self.pool = SandboxPool(
            workers, preload=("rlx.rewards.unit_tests_harness", *preload), env={}, hide=tuple(hide), base_uid=base_uid
        )

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(completions)
        jobs, slots, expectations = [], [], []
        for index, (completion, row) in enumerate(zip(completions, rows, strict=True)):
            tests = parse_tests(row)
            code = extract_code(completion)
            try:
                ast.parse(code)
            except (SyntaxError, ValueError) as err:
                verdicts[index] = Verdict(
                    0.0, Status.FORMAT, components(0.0, False), {"reason": f"does not parse: {err}"}
                )
                continue
            jobs.append((HARNESS, {"code": code, "calls": [call for call, _ in tests], "guard": True}, self.limits))
            slots.append(index)
            expectations.append([encode(value) for _, value in tests])
        for index, result, expected in zip(slots, self.pool.run(jobs), expectations, strict=True):
            verdicts[index] = decide(result, expected, self.scoring)
        done = [v for v in verdicts if v is not None]
        assert len(done) == len(verdicts), "every completion has a verdict: FORMAT above or the sandbox's"
        return done

    def close(self) -> None:
        self.pool.close()
