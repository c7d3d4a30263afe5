"""The trusted side of the code formats, without a sandbox: recognising a row's format, parse errors a user can
act on, how the completion meets the prompt, comparison semantics, plain data on the wire, pass@k."""

from __future__ import annotations

import math

import pytest

from rlx.rewards.code.cases import RowError
from rlx.rewards.code.compare import Comparison, normalise_output, outputs_match
from rlx.rewards.code.extract import choose
from rlx.rewards.code.formats import candidate_code, detect, instrument, parse
from rlx.rewards.sandbox.values import Encoder, Unencodable, decode
from rlx.score_batch import pass_at_k

CHECK_ROW = {
    "prompt": "def add(a, b):\n",
    "entry_point": "add",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n",
}


@pytest.mark.parametrize(
    "row, kind",
    [
        (CHECK_ROW, "check"),
        ({"tests": ["assert f(1) == 2"]}, "asserts"),
        ({"test_list": ["assert f(1) == 2"]}, "asserts"),  # MBPP's field name
        ({"tests": [{"input": [1], "output": 2}], "entry_point": "f"}, "asserts"),  # today's call pairs
        ({"tests": [{"stdin": "1\n", "stdout": "2\n"}]}, "stdio"),
        ({"tests": [{"input": "1\n", "output": "2\n"}]}, "stdio"),  # strings and no entry_point
        ({"input_output": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}'}, "stdio"),  # APPS
    ],
)
def test_the_format_is_recognised_from_the_row(row, kind):
    assert detect(row) == kind
    assert parse(row, "auto", "completion").format == kind


@pytest.mark.parametrize(
    "row, why",
    [
        ({"prompt": "x"}, "no tests found"),
        ({"tests": ["assert f(1) =="]}, "tests[0] does not parse"),
        ({"tests": ["f(1) == 2"]}, "must be one `assert"),
        ({"tests": []}, "non-empty list"),
        ({**CHECK_ROW, "test": "def check(candidate):\n    pass\n"}, "has no assert"),
        ({**CHECK_ROW, "test": "def test(candidate):\n    assert candidate(1, 2) == 3\n"}, "no check(candidate)"),
        ({**CHECK_ROW, "entry_point": None}, "`entry_point` must name"),
        ({**CHECK_ROW, "entry_point": "not a name"}, "`entry_point` must name"),
        ({"tests": [{"stdin": "1\n"}]}, "['stdin', 'stdout']"),
        ({"input_output": "{not json"}, "not JSON"),
        ({"input_output": {"inputs": ["1"], "outputs": []}}, "as many outputs"),
        ({"tests": [{"input": [1], "output": 2}]}, "needs an `entry_point`"),
        ({**CHECK_ROW, "code_from": "prompt_only"}, "code_from must be one of"),
        ({**CHECK_ROW, "test_format": "pytest"}, "test_format must be one of"),
    ],
)
def test_a_row_that_cannot_be_run_says_what_is_wrong(row, why):
    with pytest.raises(RowError, match=None) as err:
        parse(row, "auto", "completion")
    assert why in str(err.value), str(err.value)


def test_prompt_completion_needs_a_text_prompt():
    with pytest.raises(RowError, match="needs a text `prompt`"):
        parse({**CHECK_ROW, "prompt": [{"role": "user", "content": "hi"}]}, "auto", "prompt_completion")


def test_each_assert_is_one_test_and_equality_keeps_both_sides():
    import ast

    program, labels = instrument(ast.parse(CHECK_ROW["test"] + "    assert candidate(2, 2)\n"))
    assert labels == ["assert candidate(1, 2) == 3", "assert candidate(0, 0) == 0", "assert candidate(2, 2)"]
    assert "__rlx_assert_eq__(0, candidate(1, 2), 3)" in program and "__rlx_assert__(2, candidate(2, 2))" in program
    tests = parse({"tests": ["assert math.isclose(area(1), 3.14, rel_tol=0.01)"]}, "auto", "completion")
    assert tests.proxies == ["area"]  # called and not defined by the setup: the function under test
    assert "import math" in tests.setup  # a module the line reads: imported for the checker, as MBPP's harness had it


def test_call_pairs_become_asserts_of_the_entry_point():
    tests = parse({"tests": [{"input": [1, "a"], "output": [2]}], "entry_point": "f"}, "auto", "completion")
    assert tests.labels == ["assert f(1, 'a') == [2]"] and tests.proxies == ["f"]


def test_how_the_completion_meets_the_prompt():
    row = {"prompt": "def f(x):\n"}
    body = "    return x\n"
    assert candidate_code(body, row, "completion") == body
    assert candidate_code(body, row, "prompt_completion") == "def f(x):\n    return x\n"  # HumanEval's convention
    assert candidate_code(body, {**row, "code_from": "completion"}, "prompt_completion") == body  # the row wins
    # what runs of it is picked in the sandbox (rlx.rewards.code.extract): the last block defining a tested name
    chat = "Here:\n```python\ndef f(x): return 1\n```\nand better:\n```python\ndef f(x): return x\n```\n"
    usage = chat + "Use it so:\n```python\nprint(f(3))\n```\n"
    # the blocks before it are a notebook's earlier cells: their definitions first, the chosen block's win
    both = "def f(x): return 1\n\ndef f(x): return x\n"
    assert choose(chat, "fenced", ["f"]) == choose(usage, "fenced", ["f"]) == both
    assert choose(usage, "completion", ["f"]) == both  # a chat answer does not compile
    split = "First:\n```python\nimport heapq\nprint(heapq)\n```\nThen:\n~~~python\ndef f(x):\n    return x\n~~~\n"
    assert choose(split, "completion", ["f"]) == "import heapq\n\ndef f(x):\n    return x\n"  # usage dropped
    program = 'def f(x):\n    """Use:\n```python\nf(1)\n```\n"""\n    return x\n'
    assert choose(program, "completion", ["f"]) == program  # a program that compiles runs whole
    indented = "1. The code:\n   ```py\n   def f(x):\n       return x\n   ```\n"
    assert choose(indented, "completion", ["f"]) == "def f(x):\n    return x\n"


def test_python_equality_is_the_default_and_exact_types_an_option():
    python, exact = Comparison(), Comparison("exact")
    # what HumanEval's own check accepts: 3.0 == 3, 1 == True, [1, 2] == [1.0, 2.0]
    assert python.equal(3.0, 3) and python.equal(1, True) and python.equal([1, 2], [1.0, 2.0])
    assert not python.equal((1, 2), [1, 2])  # Python's == too
    assert not exact.equal(3.0, 3) and not exact.equal(1, True) and not exact.equal([1, 2], [1.0, 2.0])
    assert exact.equal({"a": [1, (2,)]}, {"a": [1, (2,)]})


def test_float_tolerance():
    loose = Comparison(rel_tol=1e-6)
    # 0.1 + 0.2 = 0.30000000000000004: off by 5.6e-17, relative 1.9e-16 < 1e-6
    assert not Comparison().equal(0.1 + 0.2, 0.3) and loose.equal(0.1 + 0.2, 0.3)
    assert loose.equal([1.0000001, {"k": 2.0}], [1.0, {"k": 2.0000001}])  # 1e-7 relative, inside containers
    assert not loose.equal(1.00001, 1.0)  # 1e-5 relative > 1e-6
    assert Comparison(abs_tol=0.5).equal(3, 3.4) and not Comparison("exact", abs_tol=0.5).equal(3, 3.4)
    assert not loose.equal(math.nan, math.nan)  # as Python: nan != nan


def test_stdout_normalisation():
    assert normalise_output("1 2  \n3\n\n\n", "strip") == "1 2\n3"
    assert normalise_output("1\r\n2\r\n", "strip") == "1\n2"
    assert normalise_output("1\n 2\t3 ", "tokens") == "1 2 3"
    assert not outputs_match("1 2\n", "1  2\n", "strip", Comparison())  # inner spacing counts under strip
    assert outputs_match("1 2\n", "1  2\n", "tokens", Comparison())
    assert not outputs_match("x\n", "x", "exact", Comparison())
    # 0.333333 vs 1/3: relative 1e-6 > 1e-7, < 1e-5
    assert outputs_match("0.333333\n", "0.3333333333\n", "tokens", Comparison(rel_tol=1e-5))
    assert not outputs_match("0.333333\n", "0.3333333333\n", "tokens", Comparison(rel_tol=1e-7))


def test_values_round_trip_shared_and_flat_and_refuse_the_rest():
    # the sandbox's encoding (rlx.rewards.sandbox.values), as the code formats rely on it
    import collections
    import fractions

    value = {"p": [1, 2.5, (True, None)], "A": {"x": frozenset({3})}, 7: "s", "f": fractions.Fraction(1, 3)}
    back = decode(Encoder().encode(value))
    assert back == value and list(back) == ["p", "A", 7, "f"]  # dict order kept (HumanEval/95 depends on it)
    assert type(back["p"][2]) is tuple and type(back["f"]) is fractions.Fraction
    shared = [1]
    loop: list = [shared, shared]
    loop.append(loop)
    again = decode(Encoder().encode(loop))
    assert again[0] is again[1] and again[2] is again  # sharing and cycles survive
    chain: list = []
    for _ in range(5000):  # 5000 levels deep: the graph is flat, nothing recurses
        chain = [chain]
    node, depth = decode(Encoder().encode(chain)), 0
    while node:
        node, depth = node[0], depth + 1
    assert depth == 5000
    counter = decode(Encoder().encode(collections.Counter("abca")))
    assert type(counter) is collections.Counter and counter["a"] == 2

    class AlwaysEqual:
        def __eq__(self, other):
            return True

    class Int(int):
        pass

    for hostile in (AlwaysEqual(), Int(3), [Int(1)], (x for x in ())):
        with pytest.raises(Unencodable):
            Encoder().encode(hostile)  # without a handle maker (the harness's), nothing but data encodes
    for garbage in (
        {"root": ["int", "x"]},
        {"root": ["@", 0], "nodes": [["list", "notalist"]]},
        {"root": ["@", 0], "nodes": [["dict", [[["@", 1], ["none"]]]], ["list", []]]},  # an unhashable key
        {"root": ["@", 0], "nodes": [["tuple", [["@", 0]]]]},  # a tuple that holds itself
        {  # 64 tuples, each holding the one before twice: 2^64 parts to hash, compare or print
            "root": ["@", 63],
            "nodes": [["tuple", [["int", "1"]]]] + [["tuple", [["@", k - 1], ["@", k - 1]]] for k in range(1, 64)],
        },
        {"root": ["ref", 1]},  # a handle where none is accepted
        "str",
        {"root": ["nope", 1]},
    ):
        with pytest.raises(ValueError):
            decode(garbage)


def test_unbiased_pass_at_k():
    # n=5 samples, c=2 correct: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4) and pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 4, 2) == 1.0  # n - c = 1 < k: every pair holds a correct one
    assert pass_at_k(3, 0, 3) == 0.0
    with pytest.raises(ValueError, match="at least 4 samples"):
        pass_at_k(3, 1, 4)


def test_the_prompts_helpers_are_the_tests_and_its_stubs_the_candidates():
    from rlx.rewards.code.program import prompt_helpers

    prompt = (
        "import math\nMOD = 10**9 + 7\nHUGE = 10**10**10\nINF = float('inf')\n\n"
        "def poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n\n"
        "class Solution:\n    def solve(self, xs):\n        '''The candidate writes this.'''\n\n"
        "def find_zero(xs):\n    '''Also the candidate's.'''\n"
    )
    source, classes = prompt_helpers(prompt, "find_zero")
    assert "import math" in source and "MOD = 10 ** 9 + 7" in source and "def poly" in source
    assert "HUGE" not in source and "INF" not in source  # only what cannot fail or run long in the trainer
    assert "Solution" not in source and "find_zero" not in source and classes == []
    assert prompt_helpers("Write a function that adds two numbers.", None) == ("", [])  # prose: no helpers


def test_free_names_the_stdlib_is_the_checkers_the_rest_the_candidates():
    tests = parse(
        {
            "tests": [
                "assert math.isclose(area(1), 3.14, rel_tol=0.01)",
                "assert Solution().f(LIMIT) == collections.deque()",
            ]
        },
        "auto",
        "completion",
    )
    assert "import math" in tests.setup and "import collections" in tests.setup
    assert tests.proxies == ["LIMIT", "Solution", "area"]
    row = {**CHECK_ROW, "entry_point": "Solution().add", "test": CHECK_ROW["test"] + "\ncheck(add)\n"}
    leetcode = parse(row, "auto", "completion")
    assert leetcode.steps == ["check(Solution().add)"] and "Solution" in leetcode.proxies
    assert "check(add)" not in leetcode.setup  # the program's own call of check is the checker's step


def test_a_stdlib_name_the_test_calls_or_passes_is_the_candidates_unless_it_is_a_module():
    row = {"entry_point": "tokenize", "test": "def check(candidate):\n    assert candidate('a') == ['a']\n"}
    tests = parse(row, "auto", "completion")
    assert "tokenize" in tests.proxies  # the candidate's function named tokenize, asked of the sandbox
    assert "if __rlx_standard__('tokenize'):" in tests.setup  # the module only where the candidate bound none
    only_attributes = parse({"tests": ["assert math.isclose(area(1), 3.14, rel_tol=0.01)"]}, "auto", "completion")
    assert "math" not in only_attributes.proxies  # math.isclose is the checker's, whatever the candidate's math is


def test_mbpp_test_imports_and_apps_call_based_rows():
    mbpp = parse(
        {"test_imports": ["from collections import Counter"], "test_list": ["assert f() == Counter()"]},
        "auto",
        "completion",
    )
    assert mbpp.setup.startswith("from collections import Counter\n") and "Counter" not in mbpp.proxies
    apps = parse({"input_output": '{"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]}'}, "auto", "completion")
    assert apps.format == "asserts" and apps.labels == ["assert add(1, 2) == [3]"]
    assert sorted(apps.proxies) == ["Solution", "add"]
    lines = parse({"input_output": {"inputs": [["1", "2"]], "outputs": [["3"]]}}, "auto", "completion")
    assert lines.format == "stdio" and lines.inputs == ["1\n2"] and lines.outputs == ["3"]
    with pytest.raises(RowError, match="fn_name"):
        parse({"input_output": {"fn_name": "1x", "inputs": [[1]], "outputs": [[1]]}}, "auto", "completion")


def test_unittest_assertions_are_tests_and_a_testcase_program_runs_its_methods():
    program = (
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(1), 2)\n"
        "        with self.assertRaises(ValueError):\n            f(-1)\n    def helper(self):\n        pass\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    tests = parse({"test": program}, "auto", "completion")
    assert tests.format == "check" and tests.steps == ["__rlx_unittest__(T, 'test_a')"]
    assert tests.labels == ["self.assertEqual(f(1), 2)", "with self.assertRaises(ValueError):"]
    assert tests.proxies == ["f"]
