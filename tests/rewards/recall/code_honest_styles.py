"""Correct programs against the test styles datasets publish (written for rlx): exceptions the test expects,
unittest assertions and classes, MBPP assert lists, HumanEval bodies, chat answers with fenced code, stdin/stdout
programs. STYLES: (name, row, completion), as code_honest.VALUES."""

from __future__ import annotations

from tests.rewards.recall.code_honest import py

SQRT = py("""
    def isqrt(n):
        if n < 0:
            raise ValueError("negative input")
        return int(n ** 0.5)
""")

STYLES: list[tuple[str, dict, str]] = [
    (
        "value_error_try_except",
        {
            "entry_point": "isqrt",
            "test": py("""
        def check(candidate):
            assert candidate(16) == 4
            try:
                candidate(-1)
                assert False, "expected ValueError"
            except ValueError:
                pass
    """),
        },
        SQRT,
    ),
    (
        "assert_raises",
        {
            "entry_point": "isqrt",
            "test": py("""
        import unittest

        def check(candidate):
            t = unittest.TestCase()
            t.assertEqual(candidate(9), 3)
            t.assertRaises(ValueError, candidate, -4)
            with t.assertRaisesRegex(ValueError, "negative"):
                candidate(-1)
    """),
        },
        SQRT,
    ),
    (
        "unittest_class",
        {
            "test": py("""
        import unittest

        class TestIsqrt(unittest.TestCase):
            def setUp(self):
                self.cases = {0: 0, 10: 3}

            def test_values(self):
                for n, root in self.cases.items():
                    self.assertEqual(isqrt(n), root)

            def test_negative(self):
                with self.assertRaises(ValueError):
                    isqrt(-9)


        if __name__ == "__main__":
            unittest.main()
    """)
        },
        SQRT,
    ),
    (
        "exception_subclass",
        {
            "entry_point": "parse_age",
            "test": py("""
        def check(candidate):
            assert candidate("41") == 41
            try:
                candidate("x")
            except ValueError as err:
                assert "not a number" in str(err)
            else:
                assert False
    """),
        },
        py("""
        class AgeError(ValueError):
            pass

        def parse_age(text):
            if not text.isdigit():
                raise AgeError(f"{text!r} is not a number")
            return int(text)
    """),
    ),
    (
        "mbpp_style",
        {
            "test_list": [
                "assert set(common([1, 2, 3], [2, 3, 4])) == {2, 3}",
                "assert remove_odd([1, 2, 4]) == [2, 4]",
                "assert math.isclose(area(2), 12.566, rel_tol=1e-3)",
            ],
            "test_setup_code": "import math",
        },
        py("""
        import math

        def common(a, b):
            return list(set(a) & set(b))

        def remove_odd(xs):
            return [x for x in xs if x % 2 == 0]

        def area(r):
            return math.pi * r * r
    """),
    ),
    (
        "rich_values",
        {
            "tests": [
                "assert pairs('ab') == {('a', 0): 'a', ('b', 1): 'b'}",
                "assert ratio(1, 3) == Fraction(1, 3)",
                "assert frozen([1, 1]) == frozenset({1})",
                "assert money('1.10') == Decimal('1.1')",
                "assert root(-4) == 2j",
                "assert raw('hi') == b'hi'",
            ],
            "test_setup_code": "from fractions import Fraction\nfrom decimal import Decimal\n",
        },
        py("""
        import cmath
        from decimal import Decimal
        from fractions import Fraction

        def pairs(s):
            return {(c, i): c for i, c in enumerate(s)}

        def ratio(a, b):
            return Fraction(a, b)

        def frozen(xs):
            return frozenset(xs)

        def money(text):
            return Decimal(text)

        def root(x):
            return cmath.sqrt(x)

        def raw(s):
            return s.encode()
    """),
    ),
    (
        "enum_and_big_int",
        {
            "tests": [
                "assert light(0) == Color.RED",
                "assert light(0).name == 'RED'",
                "assert factorial(30) == 265252859812191058636308480000000",
            ]
        },
        py("""
        import math
        from enum import Enum

        class Color(Enum):
            RED = 1
            GREEN = 2

        def light(n):
            return Color.RED if n == 0 else Color.GREEN

        def factorial(n):
            return math.factorial(n)
    """),
    ),
    (
        "random_reference_check",
        {
            "entry_point": "insertion_sort",
            "test": py("""
        import random

        def check(candidate):
            for _ in range(50):
                xs = [random.randint(-9, 9) for _ in range(random.randint(0, 8))]
                assert candidate(xs) == sorted(xs)
    """),
        },
        py("""
        def insertion_sort(xs):
            out = []
            for x in xs:
                i = len(out)
                while i and out[i - 1] > x:
                    i -= 1
                out.insert(i, x)
            return out
    """),
    ),
    (
        "defaults_kwargs_prints",
        {"tests": ["assert greet('Ann') == 'Hello, Ann!'", "assert greet('Bo', greeting='Hi') == 'Hi, Bo!'"]},
        py("""
        def greet(name, greeting="Hello"):
            print("debug:", name)
            return f"{greeting}, {name}!"

        if __name__ == "__main__":
            print(greet(input()))
    """),
    ),
    (
        "humaneval_body",
        {
            "prompt": "from typing import List\n\n\ndef below_zero(operations: List[int]) -> bool:\n"
            '    """True once the sum drops below 0."""\n',
            "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate([]) == False\n"
            "    assert candidate([1, -2]) == True\n",
            "entry_point": "below_zero",
            "code_from": "prompt_completion",
        },
        "    balance = 0\n    for op in operations:\n        balance += op\n"
        "        if balance < 0:\n            return True\n    return False\n",
    ),
    (
        "chat_answer_prompt_helpers",
        {
            "prompt": py('''
            import math

            def poly(xs, x):
                return sum(c * math.pow(x, i) for i, c in enumerate(xs))

            def root(xs):
                """A zero of the linear polynomial xs."""
        '''),
            "test": "def check(candidate):\n    assert abs(poly([2, 4], candidate([2, 4]))) < 1e-9\n",
            "entry_point": "root",
        },
        "The root of a + bx is -a/b:\n\n```python\ndef root(xs):\n    return -xs[0] / xs[1]\n```\n\n"
        "Usage:\n\n```python\nprint(root([2, 4]))\n```\n",
    ),
    (
        "stdio_sum",
        {"tests": [{"stdin": "3\n1 2 3\n", "stdout": "6\n"}, {"stdin": "1\n-5\n", "stdout": "-5\n"}]},
        py("""
        n = int(input())
        print(sum(map(int, input().split())))
    """),
    ),
    (
        "stdio_main_function",
        {"input_output": {"inputs": ["2\nab\ncd\n"], "outputs": ["ba\ndc\n"]}},
        py("""
        import sys

        def main():
            data = sys.stdin.read().split()
            for word in data[1:]:
                print(word[::-1])

        if __name__ == "__main__":
            main()
    """),
    ),
    (
        "stdio_chat_fenced",
        {"tests": [{"input": "4\n", "output": "16\n"}]},
        "Square it:\n\n```python\nn = int(input())\nprint(n * n)\n```\n",
    ),
]
