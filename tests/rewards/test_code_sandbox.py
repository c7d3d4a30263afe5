"""reward=unit_tests's code formats in the real sandbox: the bundled sets' correct programs pass and wrong ones
fail, and hostile completions (always-equal objects, early exits, hangs, patched modules, reading the checker)
earn nothing, each with its own label. One reward (2 workers) for the module; every batch is one reward call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlx.rewards.base import Status
from rlx.rewards.code.reward import CodeTestsReward

DATA = Path(__file__).resolve().parents[2] / "rlx" / "data" / "code"
LIMITS = {"wall_s": 20.0, "cpu_s": 10, "memory_mb": 512, "disk_mb": 32, "output_kb": 256, "fsize_mb": 1}


def make(**options) -> CodeTestsReward:
    return CodeTestsReward(2, "fraction", LIMITS, 62000, call_timeout_s=2.0, case_timeout_s=2.0, **options)


@pytest.fixture(scope="module")
def reward():
    scorer = make()
    scorer.show_expected = True  # as rlx.score sets it: failures name the value expected (training's verdicts don't)
    yield scorer
    scorer.close()


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]


def test_bundled_sets_pass_their_solutions_and_fail_the_wrong_ones(reward):
    tasks = [
        ({**row, "code_from": "prompt_completion"} if name == "check" else row)
        for name in ("stdio", "check", "asserts")
        for row in rows(name)
    ]
    assert sum(1 for t in tasks if t["task_id"].startswith("stdio/")) >= 20
    completions = [t["canonical_solution"] for t in tasks] + [t["wrong_solution"] for t in tasks]
    verdicts = reward(completions, tasks + tasks)
    right, wrong = verdicts[: len(tasks)], verdicts[len(tasks) :]
    failed = [(t["task_id"], v.details) for t, v in zip(tasks, right, strict=True) if v.status != Status.PASS]
    assert not failed, failed
    passed = [t["task_id"] for t, v in zip(tasks, wrong, strict=True) if v.status == Status.PASS]
    assert not passed, passed
    unexplained = [v for v in wrong if v.reward >= 1 or (v.status == Status.FAIL and "first_failure" not in v.details)]
    assert not unexplained, unexplained
    add = next(v for t, v in zip(tasks, wrong, strict=True) if t["task_id"] == "check/add")
    # a - b for add: candidate(2, 3) == 5 gets -1; (-1, 1) gets -2; 10**20 - 1: every assert fails
    assert add.details["first_failure"].items() >= {"got": "-1", "expected": "5", "test": 0}.items()
    assert [t["ok"] for t in add.details["tests"]] == [False, False, False]
    fizz = next(v for t, v in zip(tasks, wrong, strict=True) if t["task_id"] == "stdio/fizzbuzz")
    assert fizz.details["first_failure"]["got"].startswith("1\n2\nFizz")  # the program's output, shown


def test_training_verdicts_name_no_expected_value():
    scorer = make()  # as training builds it: show_expected stays off
    try:
        row = next(r for r in rows("check") if r["task_id"] == "check/add")
        (verdict,) = scorer([row["wrong_solution"]], [{**row, "code_from": "prompt_completion"}])
    finally:
        scorer.close()
    assert verdict.status == Status.FAIL and verdict.details["first_failure"]["got"] == "-1", verdict.details
    assert "expected" not in json.dumps(verdict.details) and "label" not in json.dumps(verdict.details)


CHECK = {
    "task_id": "t",
    "prompt": "def f(x):\n",
    "entry_point": "f",
    "code_from": "prompt_completion",
    "test": "import math\n\ndef check(candidate):\n    assert candidate(2) == 4\n"
    "    assert math.fabs(candidate(3) - 6) < 1e-9\n",
}
ALWAYS_EQUAL = (
    "    class A(int):\n        def __eq__(self, o): return True\n        __ne__ = lambda self, o: False\n"
    "        __lt__ = __eq__\n        __hash__ = int.__hash__\n    return A(0)\n"
)


@pytest.mark.parametrize(
    "body, status, error",
    [
        ("    return x * 2\n", Status.PASS, None),
        (ALWAYS_EQUAL, Status.FAIL, None),  # its int value 0 crosses, never its __eq__: 0 != 4
        ("    return None\n", Status.FAIL, None),
        ("    import sys\n    sys.exit(0)\n", Status.FAIL, "SystemExit"),
        ("    import os\n    os._exit(0)\n", Status.CRASH, "Exited"),  # its process ended mid-test
        ("    while True:\n        pass\n", Status.TIMEOUT, "Timeout"),
        ("    import math\n    math.fabs = lambda v: 0.0\n    return x * 2 if x == 2 else 0\n", Status.FAIL, None),
        ("    pass\nimport sys\nsys.exit(0)\n", Status.CRASH, None),  # exits while loading: loads nothing
    ],
    ids=["right", "always_equal", "none", "sys_exit", "os_exit", "hang", "patch_math", "exit_on_load"],
)
def test_check_programs_compare_outside_the_candidate(reward, body, status, error):
    (verdict,) = reward([body], [CHECK])
    assert verdict.status == status, verdict.details
    assert (verdict.reward == 1.0) == (status == Status.PASS)
    if error is not None:
        assert verdict.details["first_failure"]["error"] == error, verdict.details


def test_the_candidate_cannot_read_the_dataset_or_the_host(reward):
    # the task file (with canonical solutions) is readable by any user on the host; the sandbox binds none of it
    assert os.stat(DATA / "check.jsonl").st_mode & 0o004
    body = (
        "    found = []\n"
        f"    for path in ({str(DATA / 'check.jsonl')!r}, '/proc/1/environ', '/etc/shadow', {str(Path.cwd())!r}):\n"
        "        try:\n            open(path, 'rb').read(1)\n            found.append(path)\n"
        "        except Exception:\n            pass\n"
        "    return found\n"
    )
    row = {**CHECK, "test": "def check(candidate):\n    assert candidate(0) == []\n"}
    (verdict,) = reward([body], [row])
    assert verdict.status == Status.PASS, verdict.details  # every attempt was refused


def test_dict_order_reaches_the_candidate_as_sent(reward):
    row = {**CHECK, "test": "def check(candidate):\n    assert candidate({'p': 1, 'A': 2}) == ['p', 'A']\n"}
    (verdict,) = reward(["    return list(x)\n"], [row])
    assert verdict.status == Status.PASS, verdict.details


def test_exact_types_and_tolerance_are_options():
    exact, loose = make(compare="exact"), make(rel_tol=1e-6)
    row = {"task_id": "t", "tests": ["assert f(1) == 2", "assert g() == 0.3"]}
    code = "def f(x):\n    return 2.0\ndef g():\n    return 0.1 + 0.2\n"
    try:
        (strict,) = exact([code], [row])
        (tolerant,) = loose([code], [row])
    finally:
        exact.close()
        loose.close()
    # exact: 2.0 is not 2, and 0.30000000000000004 != 0.3; rel_tol=1e-6: both pass (2.0 == 2 under Python ==)
    assert strict.status == Status.FAIL and strict.details["passed"] == 0
    assert tolerant.status == Status.PASS, tolerant.details


STDIO = {"task_id": "s", "tests": [{"stdin": "3\n", "stdout": "9\n"}, {"stdin": "4\n", "stdout": "16\n"}]}


@pytest.mark.parametrize(
    "code, status, error",
    [
        ("print(int(input()) ** 2)\n", Status.PASS, None),
        ("import sys\nprint(int(input()) ** 2)\nsys.exit()\n", Status.PASS, None),  # judges accept sys.exit()
        ("import sys\nsys.exit(0)\n", Status.FAIL, None),  # exit 0, no output: earns nothing
        ("import os\nos._exit(0)\n", Status.FAIL, None),  # ends the case as sys.exit(0) does: no output
        ("import os, sys\nprint(int(input()) ** 2)\nsys.stdout.flush()\nos._exit(0)\n", Status.PASS, None),
        ("n = int(input())\nprint(n * n)\nraise ValueError('late')\n", Status.FAIL, "ValueError"),
        ("while True:\n    pass\n", Status.TIMEOUT, "Timeout"),
        ("print('9\\n' * 10**6)\n", Status.VIOLATION, None),  # 2 MB back: over output_kb
    ],
    ids=["right", "sys_exit_after", "exit_first", "os_exit", "os_exit_after", "raises", "hang", "flood"],
)
def test_stdio_outputs_are_compared_outside(reward, code, status, error):
    (verdict,) = reward([code], [STDIO])
    assert verdict.status == status, verdict.details
    if error is not None:
        assert verdict.details["first_failure"]["error"] == error, verdict.details


def test_imports_the_issue_named_work_and_a_missing_one_is_explained(reward):
    row = {"tests": ["assert f(1) == 1"]}
    code = "import cmath, calendar, pprint, zlib\ndef f(x):\n    return x\n"  # failed on a root-only pyenv before
    missing = "import no_such_module_xyz\ndef f(x):\n    return x\n"
    outside = "import yaml\ndef f(x):\n    return x\n"  # installed for rlx, not bound into the sandbox
    stdlib, absent, unbound = reward([code, missing, outside], [row] * 3)
    assert stdlib.status == Status.PASS, stdlib.details
    assert absent.status == Status.CRASH and "no_such_module_xyz" in absent.details["reason"], absent.details
    assert unbound.status == Status.CRASH and "'yaml'" in unbound.details["reason"], unbound.details
    assert "reward.packages" in unbound.details["reason"], unbound.details
