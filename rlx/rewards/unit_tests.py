"""reward=unit_tests: the completion's code runs against the row's tests in the sandbox (rlx.rewards.sandbox).

Row fields: `tests`, a list of either assert strings (`"assert add(1, 2) == 3"`, the MBPP/HumanEval form)
or objects `{"input": [args...], "output": value}` together with the row's `entry_point` (function name).
Each test is split here into a call (sent to the candidate's process) and an expected value (kept here); the
candidate's process answers with the exact-type encoding of each call's result, this process decodes it into a
plain value and compares (rlx.rewards.sandbox.values.same). The candidate never sees an expected value, and
nothing it returns is compared with its own `__eq__`.

This process never parses or runs the completion: a completion that does not compile is reported by the
sandbox (FORMAT), whatever its size or nesting. Scoring: `scoring=fraction` gives the share of tests passed (FAIL
below 1), `scoring=all` gives 1 only when all pass. TIMEOUT, CRASH, OOM and VIOLATION score 0 whatever passed
before; INFRA (the sandbox broke) is excluded upstream. Components (logged as `reward/<name>`): `pass_frac`
(share of tests passed), `valid` (1 when the code loaded and every test was answered: PASS or FAIL) and
`correct` (1 when every test passed). Verdict details carry no expected value and nothing of the host.
"""

from __future__ import annotations

import ast
import logging
import re

from rlx.rewards.base import Status, Verdict
from rlx.rewards.sandbox.session import Ended, Failure, Limits, Sandbox, Session
from rlx.rewards.sandbox.values import decode, same

HARNESS = "rlx.rewards.unit_tests_harness"
MODULES = ("rlx.rewards.sandbox.values",)
FENCE = re.compile(r"```(?:python|py)?\n(.*?)```", re.DOTALL)
log = logging.getLogger(__name__)


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


def answers(session: Session, calls: list[str]) -> dict:
    """Load the program, then evaluate each call; returns what came back (plain data, untrusted)."""
    loaded = session.request({"op": "load"})[0]
    if loaded.get("ok") is not True:
        return {"load_error": str(loaded.get("error"))[:80]}
    return {"replies": [session.request({"op": "eval", "expr": call})[0] for call in calls]}


def decide(outcome: dict | Failure, expected: list, scoring: str) -> Verdict:
    """Verdict from what the candidate answered (or how its session ended) and the expected values (pure)."""
    if isinstance(outcome, Failure):
        facts = {"wall_s": outcome.facts.wall_s, "output_tail": outcome.facts.output_tail}
        return Verdict(0.0, outcome.status, components(0.0, False), {**facts, "reason": outcome.reason})
    if "load_error" in outcome:
        error = outcome["load_error"]
        status = Status.FORMAT if error in ("SyntaxError", "IndentationError", "TabError") else Status.CRASH
        if error == "MemoryError":
            status = Status.OOM
        return Verdict(0.0, status, components(0.0, False), {"reason": f"loading the code raised {error}"})
    passed, errors = [], {}
    for index, (reply, want) in enumerate(zip(outcome["replies"], expected, strict=True)):
        if "value" not in reply:
            errors[index] = str(reply.get("error"))[:80]
            continue
        try:
            got = decode(reply["value"])
        except (ValueError, OverflowError):
            errors[index] = "malformed value"
            continue
        if same(got, want):
            passed.append(index)
    fraction = len(passed) / len(expected)
    details = {"passed": passed, "n_tests": len(expected), "errors": errors}
    if fraction == 1.0:
        return Verdict(1.0, Status.PASS, components(1.0, True), details)
    if "MemoryError" in errors.values():
        return Verdict(0.0, Status.OOM, components(fraction, False), {**details, "reason": "MemoryError"})
    reward = fraction if scoring == "fraction" else 0.0
    return Verdict(reward, Status.FAIL, components(fraction, True), details)


class UnitTestsReward:
    required_fields = ("tests",)
    sample_fields: tuple[str, ...] = ()  # `tests` holds expected values: samples.jsonl must not carry them

    def __init__(self, workers: int, scoring: str, limits: dict, base_uid: int) -> None:
        """Refuses to start (SandboxUnavailable, one line) where no sandbox can be built."""
        if scoring not in ("fraction", "all"):
            raise ValueError(f"reward.scoring must be 'fraction' or 'all' (got {scoring!r})")
        self.scoring = scoring
        self.sandbox = Sandbox(HARNESS, workers, Limits(**limits), modules=MODULES, base_uid=base_uid)

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        tests = [parse_tests(row) for row in rows]
        calls = [[call for call, _ in t] for t in tests]
        programs = [extract_code(c) for c in completions]
        outcomes = self.sandbox.map(programs, lambda session, i: answers(session, calls[i]))
        verdicts = [decide(o, [v for _, v in t], self.scoring) for o, t in zip(outcomes, tests, strict=True)]
        for verdict in verdicts:
            if verdict.status == Status.INFRA:
                log.warning("sandbox: %s; the sample is INFRA and the jail is restarted", verdict.details["reason"])
        return verdicts

    def close(self) -> None:
        self.sandbox.close()


__all__ = ["Ended", "UnitTestsReward", "decide", "extract_code", "parse_tests"]
