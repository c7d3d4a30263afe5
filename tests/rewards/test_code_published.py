"""LiveCodeBench and CodeContests rows as those datasets publish them (field names, JSON text, LiveCodeBench's
packed private tests), scored by reward=unit_tests as the trainer calls it, and compared as their own harnesses
compare (LiveCodeBench's testing_util: a tuple result is a list, stdout lines stripped and read as decimals)."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest

from rlx.rewards.base import Status
from rlx.rewards.code.cases import RowError
from rlx.rewards.code.formats import detect, parse
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET, configured_unit_tests_reward


def packed(cases: list[dict]) -> str:
    """LiveCodeBench's private_test_cases: the JSON text pickled, zlib-compressed, base64-encoded."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def case(given: str, expected: str, kind: str) -> dict:
    return {"input": given, "output": expected, "testtype": kind}


LCB_FUNCTIONAL = {
    "question_title": "Maximum pair sum",
    "question_content": "Given nums and k, return the k largest values of nums, largest first.",
    "platform": "leetcode",
    "starter_code": "class Solution:\n    def largest(self, nums: List[int], k: int) -> List[int]:\n        ",
    "public_test_cases": json.dumps([case("[3, 1, 2]\n2", "[3, 2]", "functional")]),
    "private_test_cases": packed(
        [case("[5]\n1", "[5]", "functional"), case("[1, 1, 4]\n3", "[4, 1, 1]", "functional")]
    ),
    "metadata": json.dumps({"func_name": "largest"}),
}
LCB_STDIN = {
    "question_title": "Halves",
    "platform": "atcoder",
    "starter_code": "",
    "public_test_cases": json.dumps([case("3\n1 2 3\n", "0.5 1.0 1.5\n", "stdin")]),
    "private_test_cases": json.dumps([case("1\n4\n", "2\n", "stdin")]),
    "metadata": "{}",
}
CONTESTS = {
    "name": "1A_sum",
    "description": "Print the sum of the two numbers.",
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["5 5\n"], "output": ["10\n"]},
    "generated_tests": {"input": ["-1 1\n", "100 200\n"], "output": ["0\n", "300\n"]},
}

HONEST = [
    (  # LeetCode's class, typing names from the starter code, a helper method
        "class_solution",
        LCB_FUNCTIONAL,
        "```python\nclass Solution:\n    def largest(self, nums: List[int], k: int) -> List[int]:\n"
        "        return self._top(nums)[:k]\n\n"
        "    def _top(self, nums):\n        return sorted(nums, reverse=True)\n```",
    ),
    (  # a tuple where the JSON says a list: LiveCodeBench's harness takes it
        "tuple_result",
        LCB_FUNCTIONAL,
        "import heapq\n\nclass Solution:\n    def largest(self, nums, k):\n"
        "        return tuple(heapq.nlargest(k, nums))\n",
    ),
    (  # stdin with sys.stdin, numbers printed as floats where the expected output has "2"
        "stdin_floats",
        LCB_STDIN,
        "import sys\n\ndef main():\n    data = sys.stdin.read().split()\n    n = int(data[0])\n"
        "    print(' '.join(str(int(x) / 2) for x in data[1:1 + n]))\n\nif __name__ == '__main__':\n    main()\n",
    ),
    ("contest_sum", CONTESTS, "a, b = map(int, input().split())\nprint(a + b)\n"),
]
WRONG = [
    (  # the right values, not as a list: [5] is not 5 (APPS's one-item leniency is not LiveCodeBench's)
        "unwrapped_item",
        LCB_FUNCTIONAL,
        "class Solution:\n    def largest(self, nums, k):\n        top = sorted(nums, reverse=True)[:k]\n"
        "        return top[0] if k == 1 else top\n",
    ),
    (
        "ascending",
        LCB_FUNCTIONAL,
        "class Solution:\n    def largest(self, nums, k):\n        return sorted(nums)[-k:]\n",
    ),
    ("integer_halves", LCB_STDIN, "n = int(input())\nprint(*[int(x) // 2 for x in input().split()])\n"),
    ("public_only", CONTESTS, "a, b = map(int, input().split())\nprint(3 if a == 1 else a * b)\n"),
]


@pytest.fixture(scope="module")
def reward():
    built = configured_unit_tests_reward(scoring="all", base_uid=61000 + RUN_UID_OFFSET)
    yield built
    built.close()


def test_rows_are_recognised_and_every_published_case_is_a_test():
    assert detect(LCB_FUNCTIONAL) == detect(LCB_STDIN) == detect(CONTESTS) == "stdio"
    functional = parse(LCB_FUNCTIONAL, "auto", "completion")
    assert functional.format == "asserts" and len(functional.labels) == 3  # public and packed private
    assert functional.labels[0] == "assert largest([3, 1, 2], 2) == [3, 2]"
    stdin = parse(LCB_STDIN, "auto", "completion")
    assert stdin.format == "stdio" and stdin.inputs == ["3\n1 2 3\n", "1\n4\n"] and stdin.output == "lines"
    contests = parse(CONTESTS, "auto", "completion")
    assert contests.inputs == ["1 2\n", "5 5\n", "-1 1\n", "100 200\n"] and contests.output is None


@pytest.mark.parametrize("name, row, completion", HONEST, ids=[h[0] for h in HONEST])
def test_honest_answers_get_full_credit(reward, name, row, completion):
    verdict = reward([completion], [row])[0]
    assert verdict.status == Status.PASS and verdict.reward == 1.0, verdict.details


@pytest.mark.parametrize("name, row, completion", WRONG, ids=[w[0] for w in WRONG])
def test_wrong_answers_get_nothing(reward, name, row, completion):
    verdict = reward([completion], [row])[0]
    assert verdict.status == Status.FAIL and verdict.reward == 0.0, verdict.details


class Boom:
    def __reduce__(self):
        return (print, ("the row ran code",))


@pytest.mark.parametrize(
    "row, why",
    [
        (
            {**LCB_FUNCTIONAL, "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()},
            "builtins.print",
        ),
        ({**LCB_FUNCTIONAL, "private_test_cases": "not json, not packed"}, "neither JSON nor"),
        ({**LCB_FUNCTIONAL, "metadata": "{}"}, "func_name"),
        ({**LCB_FUNCTIONAL, "public_test_cases": "123"}, "must list"),
        ({**LCB_FUNCTIONAL, "public_test_cases": "[]", "private_test_cases": "[]"}, "hold no case"),
        (
            {**LCB_FUNCTIONAL, "public_test_cases": json.dumps([case("[1]\n1", "[1]", "stdin")])},
            "all be `stdin` or all",
        ),
        ({**LCB_FUNCTIONAL, "public_test_cases": json.dumps([case("[1\n1", "[1]", "functional")])}, "must be JSON"),
        ({**CONTESTS, "private_tests": {"input": ["1 2\n"], "output": []}}, "as many outputs as inputs"),
    ],
)
def test_a_malformed_published_row_says_what_is_wrong(row, why, capsys):
    with pytest.raises(RowError, match=why):
        parse(row, "auto", "completion")
    assert "the row ran code" not in capsys.readouterr().out  # a pickled call is refused, never made
