"""Correct programs as people write them (written for rlx): functions, classes and the objects they return, against
tests in the styles datasets publish; each must earn full credit from reward=unit_tests with its default config.
VALUES: (name, row, completion); a row without `code_from` runs under the default (`completion`). The test
styles themselves (exceptions, unittest, MBPP, HumanEval, chat answers, stdin/stdout): code_honest_styles.py."""

from __future__ import annotations

from textwrap import dedent


def py(text: str) -> str:
    return dedent(text).lstrip("\n")


LINKED_PROMPT = py("""
    class ListNode:
        def __init__(self, val=0, next=None):
            self.val = val
            self.next = next


    def list_node(values):
        head = None
        for value in reversed(values):
            head = ListNode(value, head)
        return head


    def is_same_list(a, b):
        while a and b:
            if a.val != b.val:
                return False
            a, b = a.next, b.next
        return a is None and b is None
""")

VALUES: list[tuple[str, dict, str]] = [
    (
        "helpers",
        {"tests": ["assert is_pal('A man, a plan, a canal: Panama')", "assert not is_pal('ab')"]},
        py("""
        def clean(text):
            return [c.lower() for c in text if c.isalnum()]

        def is_pal(text):
            letters = clean(text)
            return letters == letters[::-1]
    """),
    ),
    (
        "recursion_memo",
        {"test_list": ["assert fib(40) == 102334155", "assert [fib(i) for i in range(4)] == [0, 1, 1, 2]"]},
        py("""
        from functools import lru_cache

        @lru_cache(maxsize=None)
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
    """),
    ),
    (
        "stdlib_imports",
        {"tests": ["assert top_k(list('abacab'), 2) == ['a', 'b']", "assert math.isclose(mean([1, 2]), 1.5)"]},
        py("""
        import heapq
        from collections import Counter
        from statistics import fmean

        def top_k(words, k):
            counts = Counter(words)
            return heapq.nlargest(k, counts, key=counts.get)

        def mean(xs):
            return fmean(xs)
    """),
    ),
    (
        "class_helper",
        {"tests": ["assert hops({'a': ['b'], 'b': ['c'], 'c': []}, 'a', 'c') == 2"]},
        py("""
        from collections import deque

        class Graph:
            def __init__(self, edges):
                self.edges = edges

            def distance(self, start, goal):
                seen, queue = {start}, deque([(start, 0)])
                while queue:
                    node, d = queue.popleft()
                    if node == goal:
                        return d
                    for nxt in self.edges[node]:
                        if nxt not in seen:
                            seen.add(nxt)
                            queue.append((nxt, d + 1))
                return -1

        def hops(edges, start, goal):
            return Graph(edges).distance(start, goal)
    """),
    ),
    (
        "leetcode_check",
        {
            "prompt": "from typing import *\n\nclass Solution:\n"
            "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n",
            "test": py("""
            def check(candidate):
                assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]
                assert candidate(nums=[3, 3], target=6) == [0, 1]
        """),
            "entry_point": "Solution().twoSum",
        },
        "```python\n"
        + py("""
        class Solution:
            def twoSum(self, nums: List[int], target: int) -> List[int]:
                seen = {}
                for i, x in enumerate(nums):
                    if target - x in seen:
                        return [seen[target - x], i]
                    seen[x] = i
    """)
        + "```\n",
    ),
    (
        "leetcode_asserts",
        {"tests": ["assert Solution().climbStairs(5) == 8", "assert Solution.MOD == 10**9 + 7"]},
        py("""
        class Solution:
            MOD = 10**9 + 7

            def climbStairs(self, n: int) -> int:
                a, b = 1, 1
                for _ in range(n):
                    a, b = b, a + b
                return a % self.MOD
    """),
    ),
    (
        "linked_list",
        {
            "prompt": LINKED_PROMPT,
            "test": py("""
            def check(candidate):
                assert is_same_list(candidate(head=list_node([1, 2, 3])), list_node([3, 2, 1]))
                assert candidate(head=list_node([])) is None
        """),
            "entry_point": "Solution().reverseList",
            "code_from": "prompt_completion",
        },
        "\n"
        + py("""
        class Solution:
            def reverseList(self, head):
                prev = None
                while head:
                    head.next, prev, head = prev, head, head.next
                return prev
    """),
    ),
    (
        "generator",
        {
            "tests": [
                "assert list(evens(9)) == [0, 2, 4, 6, 8]",
                "assert next(evens(3)) == 0",
                "assert sum(evens(2001)) == 1001000",
            ]
        },
        py("""
        def evens(limit):
            n = 0
            while n < limit:
                yield n
                n += 2
    """),
    ),
    (
        "generator_expression",
        {"tests": ["assert sorted(squares([3, 1])) == [1, 9]", "assert 4 in squares([2])"]},
        py("""
        def squares(xs):
            return (x * x for x in xs)
    """),
    ),
    (
        "namedtuple",
        {
            "tests": [
                "assert span([3, 1, 2]) == (1, 3)",
                "assert span([5]).high == 5",
                "assert span([2, 4]) == Span(2, 4)",
            ]
        },
        py("""
        from typing import NamedTuple

        class Span(NamedTuple):
            low: int
            high: int

        def span(xs):
            return Span(min(xs), max(xs))
    """),
    ),
    (
        "dataclass",
        {
            "tests": [
                "assert parse('3,4') == Point(3, 4)",
                "assert parse('0,1').y == 1",
                "assert parse('1,2') != Point(2, 1)",
                "assert isinstance(parse('1,1'), Point)",
                "assert str(parse('1,2')) == 'Point(x=1, y=2)'",
            ]
        },
        py("""
        from dataclasses import dataclass

        @dataclass
        class Point:
            x: int
            y: int

        def parse(text):
            x, y = text.split(",")
            return Point(int(x), int(y))
    """),
    ),
    (
        "stateful_class",
        {
            "entry_point": "Stack",
            "test": py("""
        def check(candidate):
            s = candidate()
            s.push(1)
            s.push(2)
            assert s.pop() == 2
            assert len(s) == 1 and s.peek() == 1
            assert not s.empty()
    """),
        },
        py("""
        class Stack:
            def __init__(self):
                self.items = []

            def push(self, x):
                self.items.append(x)

            def pop(self):
                return self.items.pop()

            def peek(self):
                return self.items[-1]

            def empty(self):
                return not self.items

            def __len__(self):
                return len(self.items)
    """),
    ),
    (
        "custom_iterable",
        {"tests": ["assert list(Countdown(3)) == [3, 2, 1]", "assert 2 in Countdown(3)"]},
        py("""
        class Countdown:
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n, 0, -1))
    """),
    ),
    (
        "closure",
        {"tests": ["assert make_adder(2)(3) == 5", "assert list(map(make_adder(1), [1, 2])) == [2, 3]"]},
        py("""
        def make_adder(k):
            def add(x):
                return x + k
            return add
    """),
    ),
    (
        "mutation",
        {
            "entry_point": "sort_in_place",
            "test": py("""
        def check(candidate):
            xs = [3, 1, 2]
            assert candidate(xs) is None
            assert xs == [1, 2, 3]
            grid = [[0, 0], [0, 0]]
            row = grid[0]
            zero_first_column(grid, 7)
            assert row == [7, 0] and grid == [[7, 0], [7, 0]]
            d = {"a": 1}
            add_key(d, "b")
            assert d == {"a": 1, "b": 0}
    """),
        },
        py("""
        def sort_in_place(xs):
            xs.sort()

        def zero_first_column(grid, value):
            for r in grid:
                r[0] = value

        def add_key(d, key):
            d.setdefault(key, 0)
    """),
    ),
    (
        "callables",
        {
            "tests": [
                "assert apply_twice(lambda x: x * 3, 2) == 18",
                "assert order(['bbb', 'a', 'cc'], len) == ['a', 'cc', 'bbb']",
                "assert order([1, 3, 2], key=lambda v: -v) == [3, 2, 1]",
                "assert count_if([1, 2, 3, 4], is_even) == 2",
            ],
            "test_setup_code": "def is_even(n):\n    return n % 2 == 0\n",
        },
        py("""
        def apply_twice(f, x):
            return f(f(x))

        def order(items, key):
            return sorted(items, key=key)

        def count_if(items, predicate):
            return sum(1 for i in items if predicate(i))
    """),
    ),
]
