"""The candidate's objects as a test program meets them (rlx.rewards.code.client / remote): what Python's own
semantics would give in one program, case by case, in one batch of the real sandbox; and the refill of mutated
arguments without a sandbox (rlx.rewards.code.refill)."""

from __future__ import annotations

import pytest

from rlx.rewards.base import Status
from rlx.rewards.code.refill import targets_for
from rlx.rewards.sandbox.values import Encoder, decode
from tests.rewards.recall.code_honest import py
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET, configured_unit_tests_reward

CASES: dict[str, tuple[dict, str]] = {
    "infinite_generator_sliced": (
        {"tests": ["assert list(itertools.islice(naturals(), 5)) == [0, 1, 2, 3, 4]"]},
        "def naturals():\n    n = 0\n    while True:\n        yield n\n        n += 1\n",
    ),
    "generator_raises_after_its_items": (
        {
            "entry_point": "g",
            "test": "def check(candidate):\n    it = candidate()\n    assert next(it) == 1\n"
            "    try:\n        next(it)\n    except KeyError:\n        pass\n    else:\n        assert False\n",
        },
        "def g():\n    yield 1\n    raise KeyError('k')\n",
    ),
    "the_tests_exception_reaches_the_candidate": (
        {"tests": ["assert safe(lambda v: 1 / v, 0) == 'div'", "assert safe(lambda v: 1 / v, 2) == 0.5"]},
        "def safe(f, x):\n    try:\n        return f(x)\n    except ZeroDivisionError:\n        return 'div'\n",
    ),
    "a_callback_calls_the_candidate_again": (
        {"tests": ["assert apply(lambda v: double(v) + 1, 3) == 7"]},
        "def double(v):\n    return 2 * v\n\ndef apply(f, x):\n    return f(x)\n",
    ),
    "the_result_is_the_argument": (
        {
            "entry_point": "push",
            "test": "def check(candidate):\n    a = []\n    b = candidate(a, 1)\n    assert b is a and a == [1]\n",
        },
        "def push(xs, v):\n    xs.append(v)\n    return xs\n",
    ),
    "an_argument_passed_twice": (
        {
            "entry_point": "twice",
            "test": "def check(candidate):\n    x = []\n    assert candidate(x, x) is True\n    assert x == [1]\n",
        },
        "def twice(a, b):\n    a.append(1)\n    return a is b\n",
    ),
    "a_keyword_argument_mutated": (
        {
            "entry_point": "fill",
            "test": "def check(candidate):\n    d = {}\n    candidate(out=d)\n    assert d == {'k': 1}\n",
        },
        "def fill(*, out):\n    out['k'] = 1\n",
    ),
    "an_object_of_the_tests_class": (
        {
            "tests": ["assert bump(Box(1)) == 2"],
            "test_setup_code": py("""
            class Box:
                def __init__(self, v):
                    self.v = v
        """),
            "entry_point": "bump",
        },
        "def bump(box):\n    box.v += 1\n    return box.v\n",
    ),
    "the_tests_object_mutated": (
        {
            "entry_point": "bump",
            "test": py("""
            class Box:
                def __init__(self, v):
                    self.v = v

            def check(candidate):
                b = Box(1)
                candidate(b)
                assert b.v == 2 and isinstance(b, Box)
        """),
        },
        "def bump(box):\n    box.v += 1\n",
    ),
    "a_namedtuple_of_the_tests": (
        {
            "tests": ["assert swap(P(1, 2)) == (2, 1)", "assert swap(P(1, 2)) != P(2, 1) or True"],
            "test_setup_code": "from collections import namedtuple\nP = namedtuple('P', 'x y')\n",
        },
        "def swap(p):\n    return (p.y, p.x)\n",
    ),
    "attributes_set_by_the_test": (
        {
            "tests": ["assert norm1(moved(Point(1, 2))) == 7"],
            "test_setup_code": py("""
            def moved(p):
                p.x = 5
                return p
        """),
        },
        "class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n\n"
        "def norm1(p):\n    return p.x + p.y\n",
    ),
    "a_stdlib_exception_keeps_its_name": (
        {
            "entry_point": "load",
            "test": "def check(candidate):\n    try:\n        candidate('x')\n"
            "    except ValueError as err:\n        assert type(err).__name__ == 'JSONDecodeError'\n"
            "    else:\n        assert False\n",
        },
        "import json\n\ndef load(text):\n    return json.loads(text)\n",
    ),
    "objects_in_a_set": (
        {"tests": ["assert len(tags()) == 2", "assert sorted(t.name for t in tags()) == ['a', 'b']"]},
        "from dataclasses import dataclass\n\n@dataclass(frozen=True)\nclass Tag:\n    name: str\n\n"
        "def tags():\n    return {Tag('a'), Tag('b'), Tag('a')}\n",
    ),
    "a_global_the_candidate_changes": (  # data is read once loaded (documented): the value at load time
        {"tests": ["assert f() == LIMIT", "assert LIMIT == 3"]},
        "LIMIT = 3\n\ndef f():\n    return LIMIT\n",
    ),
}


RAISES = "def f(x):\n    if x < 0:\n        raise ValueError('no')\n    return x\n"
# wrong programs whose error Python would report, though every assert ran: never full credit
WRONG: dict[str, tuple[dict, str]] = {
    "raises_after_the_last_assert": (
        {"entry_point": "f", "test": "def check(candidate):\n    assert candidate(1) == 1\n    candidate(-1)\n"},
        RAISES,
    ),
    "a_unittest_method_without_assertions_raises": (
        {
            "test": "import unittest\n\nclass T(unittest.TestCase):\n    def test_value(self):\n"
            "        self.assertEqual(f(1), 1)\n\n    def test_runs(self):\n        f(-1)\n"
        },
        RAISES,
    ),
}


@pytest.mark.slow
def test_python_semantics_case_by_case():
    reward = configured_unit_tests_reward(base_uid=61700 + RUN_UID_OFFSET)
    cases = {**CASES, **WRONG}
    try:
        names = list(cases)
        verdicts = dict(zip(names, reward([cases[n][1] for n in names], [cases[n][0] for n in names]), strict=True))
    finally:
        reward.close()
    failed = {n: verdicts[n].details for n in CASES if verdicts[n].status != Status.PASS}
    assert failed == {}
    for name in WRONG:  # one of the two tests (the program's own error) failed: half credit, FAIL
        verdict = verdicts[name]
        assert verdict.status == Status.FAIL and verdict.reward == 0.5, (name, verdict)
        assert verdict.details["first_failure"]["error"] == "ValueError", verdict.details


def test_mutated_arguments_refill_the_tests_own_objects_in_place():
    inner = [0, 0]
    grid = [inner, [1, 1]]
    index = {"k": [5]}
    # the candidate's reply: [result, args, kwargs] as they are after its call (inner[0] set, a row added)
    after = Encoder().encode([None, [[[9, 0], [1, 1], [2, 2]]], {"index": {"k": [5, 6]}}])
    top = after["nodes"][after["root"][1]][1]
    sent_args = after["nodes"][top[1][1]][1]
    sent_kwargs = after["nodes"][top[2][1]][1]
    pairs = [(sent_args[0], grid), (sent_kwargs[0][1], index)]
    result, _, _ = decode(after, targets=targets_for(after, pairs))
    assert result is None
    assert grid == [[9, 0], [1, 1], [2, 2]] and grid[0] is inner  # the row the test holds is the same list
    assert index == {"k": [5, 6]}
    # a forged reply may name nodes of the wrong kind: nothing of the test's is refilled with another type
    forged = Encoder().encode([None, [{"a": 1}], {}])
    top = forged["nodes"][forged["root"][1]][1]
    mismatched = targets_for(forged, [(forged["nodes"][top[1][1]][1][0], grid)])
    assert mismatched == {}
