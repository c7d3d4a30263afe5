"""The second red team's corpus against reward=unit_tests (written for rlx, in styles the first corpus lacked).
HONEST: correct programs that must earn full credit; ADVERSARIAL: programs that must score 0 with a label.
(name, row, completion), as code_honest.VALUES.

Honest: competitive programmers' input and output (sys.stdin.buffer, open(0), PyRival's FastIO over os.read,
sys.stdout.buffer, a recursion thread never joined, exit() and os._exit after printing, fileinput), APPS's
call-based rows and line-list inputs, MBPP's test_imports, LeetCode classes with helper methods in a chat answer
of several blocks, a function named like a standard-library module, dataclasses that sort, itertools and
map/zip results, Counter against a dict, pytest.raises, unittest's assertCountEqual, in-place matrix rotation.
Adversarial: what the test's own code would walk for ever (a ListNode list closed into a cycle) or hash, compare
and print for ever (a value whose shared parts repeat 2^64 times, forged or built), a program thread that never
ends, and a `math` of the candidate's own that the test reads `isclose` from.
"""

from __future__ import annotations

from tests.rewards.recall.code_honest import py

SUMS = {"tests": [{"stdin": "2\n3\n1 2 3\n2\n5 5\n", "stdout": "6\n10\n"}, {"stdin": "1\n1\n7\n", "stdout": "7\n"}]}
FAST_IO = py("""
    import os
    import sys
    from io import BytesIO, IOBase

    BUFSIZE = 8192


    class FastIO(IOBase):
        newlines = 0

        def __init__(self, file):
            self._fd = file.fileno()
            self.buffer = BytesIO()
            self.writable = "x" in file.mode or "r" not in file.mode
            self.write = self.buffer.write if self.writable else None

        def readline(self):
            while self.newlines == 0:
                b = os.read(self._fd, max(os.fstat(self._fd).st_size, BUFSIZE))
                self.newlines = b.count(b"\\n") + (not b)
                ptr = self.buffer.tell()
                self.buffer.seek(0, 2), self.buffer.write(b), self.buffer.seek(ptr)
            self.newlines -= 1
            return self.buffer.readline()

        def flush(self):
            if self.writable:
                os.write(self._fd, self.buffer.getvalue())
                self.buffer.truncate(0), self.buffer.seek(0)


    class IOWrapper(IOBase):
        def __init__(self, file):
            self.buffer = FastIO(file)
            self.flush = self.buffer.flush
            self.writable = self.buffer.writable
            self.write = lambda s: self.buffer.write(s.encode("ascii"))
            self.readline = lambda: self.buffer.readline().decode("ascii")


    sys.stdin, sys.stdout = IOWrapper(sys.stdin), IOWrapper(sys.stdout)
    input = lambda: sys.stdin.readline().rstrip("\\r\\n")

    for _ in range(int(input())):
        input()
        print(sum(map(int, input().split())))
""")
TOP_K_PROMPT = py("""
    from typing import List

    class Solution:
        def topKFrequent(self, nums: List[int], k: int) -> List[int]:
""")
LINKED_PROMPT = py('''
    from typing import Optional


    class ListNode:
        def __init__(self, val=0, next=None):
            self.val = val
            self.next = next


    def list_node(values):
        head = None
        for v in reversed(values):
            head = ListNode(v, head)
        return head


    def to_list(node):
        out = []
        while node:
            out.append(node.val)
            node = node.next
        return out


    class Solution:
        def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:
            """Reverse the list."""
''')
REVERSE = {
    "prompt": LINKED_PROMPT,
    "entry_point": "Solution().reverseList",
    "test": "def check(candidate):\n    assert to_list(candidate(list_node([1, 2, 3]))) == [3, 2, 1]\n",
}
DOUBLED = "def f(x):\n    value = [1]\n    for _ in range(64):\n        value = [value, value]\n    return value\n"
FORGED_SET = py("""
    import rlx.rewards.unit_tests_harness as harness
    real = harness.Server.dispatch
    def forged(self, message):
        if message.get("op") == "call":  # a set of a tuple whose two items are the same tuple, 64 times down
            nodes = [["tuple", [["int", "1"]]]]
            nodes += [["tuple", [["@", k - 1], ["@", k - 1]]] for k in range(1, 64)]
            nodes.append(["set", [["@", 63]]])
            return {"value": {"root": ["@", 64], "nodes": nodes}}
        return real(self, message)
    harness.Server.dispatch = forged
    def uniq(xs):
        return 0
""")

HONEST: list[tuple[str, dict, str]] = [
    (
        "stdin_buffer_read",
        SUMS,
        py("""
        import sys
        data = sys.stdin.buffer.read().split()
        t, i = int(data[0]), 1
        for _ in range(t):
            n = int(data[i])
            print(sum(map(int, data[i + 1 : i + 1 + n])))
            i += 1 + n
    """),
    ),
    (
        "stdin_open_zero",
        SUMS,
        py("""
        data = open(0).read().split()
        t, i, out = int(data[0]), 1, []
        for _ in range(t):
            n = int(data[i])
            out.append(sum(map(int, data[i + 1 : i + 1 + n])))
            i += 1 + n
        print(*out, sep="\\n")
    """),
    ),
    ("stdin_pyrival_fast_io", SUMS, FAST_IO),
    (
        "stdout_buffer_write",
        SUMS,
        py("""
        import sys
        input = sys.stdin.readline
        out = []
        for _ in range(int(input())):
            input()
            out.append(str(sum(map(int, input().split()))))
        sys.stdout.buffer.write(("\\n".join(out) + "\\n").encode())
    """),
    ),
    (
        "recursion_thread_never_joined",
        SUMS,
        py("""
        import sys
        import threading

        sys.setrecursionlimit(1 << 20)
        threading.stack_size(1 << 26)

        def total(xs):
            return 0 if not xs else xs[0] + total(xs[1:])

        def main():
            for _ in range(int(input())):
                input()
                print(total(list(map(int, input().split()))))

        threading.Thread(target=main).start()
    """),
    ),
    (
        "exit_after_printing",
        {"tests": [{"stdin": "1 2\n", "stdout": "3\n"}]},
        "a, b = map(int, input().split())\nprint(a + b)\nexit()\n",
    ),
    (
        "os_exit_after_flush",
        {"tests": [{"stdin": "1 2\n", "stdout": "3\n"}]},
        py("""
        import os
        import sys
        a, b = map(int, input().split())
        print(a + b)
        sys.stdout.flush()
        os._exit(0)
    """),
    ),
    (
        "fileinput_lines",
        {"tests": [{"stdin": "2\nab\ncd\n", "stdout": "ba\ndc\n"}]},
        py("""
        import fileinput
        for number, line in enumerate(fileinput.input()):
            if number:
                print(line.strip()[::-1])
    """),
    ),
    (
        "input_larger_than_a_pipe",
        {"tests": [{"stdin": "300000\n" + "7 " * 300000 + "\n", "stdout": "2100000\n"}]},
        "import sys\nsys.stdin.readline()\nprint(sum(map(int, sys.stdin.readline().split())))\n",
    ),
    (
        "apps_call_based",
        {
            "input_output": '{"fn_name": "sum_pairs", "inputs": [[[1, 4, 8, 7, 3, 15], 8], '
            '[[1, -2, 3], 1]], "outputs": [[[1, 7]], [[-2, 3]]]}'
        },
        py("""
        def sum_pairs(xs, s):
            seen = set()
            for x in xs:
                if s - x in seen:
                    return [s - x, x]
                seen.add(x)
    """),
    ),
    (
        "apps_call_based_solution_class",
        {"input_output": {"fn_name": "divide", "inputs": [[7, 2]], "outputs": [[3, 1]]}},
        "class Solution:\n    def divide(self, a, b):\n        return a // b, a % b\n",
    ),
    (
        "apps_input_as_lines",
        {"input_output": {"inputs": [["2", "1 2"]], "outputs": [["3"]]}},
        "input()\nprint(sum(map(int, input().split())))\n",
    ),
    (
        "mbpp_test_imports",
        {
            "test_imports": ["from collections import Counter"],
            "test_list": ["assert count_words('a b a') == Counter({'a': 2, 'b': 1})"],
        },
        "def count_words(s):\n    out = {}\n    for w in s.split():\n"
        "        out[w] = out.get(w, 0) + 1\n    return out\n",
    ),
    (
        "leetcode_helpers_in_a_chat_answer",
        {
            "prompt": TOP_K_PROMPT,
            "entry_point": "Solution().topKFrequent",
            "test": "def check(candidate):\n    assert sorted(candidate([1, 1, 1, 2, 2, 3], 2)) == [1, 2]\n"
            "    assert candidate([1], 1) == [1]\n",
        },
        "First count, then take the k most common:\n\n```python\nfrom collections import Counter\n```\n\nIn full:\n\n"
        "```python\nimport heapq\nfrom collections import Counter\nfrom typing import List\n\n\nclass Solution:\n"
        "    def _counts(self, nums: List[int]) -> Counter:\n        return Counter(nums)\n\n"
        "    def topKFrequent(self, nums: List[int], k: int) -> List[int]:\n        counts = self._counts(nums)\n"
        "        return [x for x, _ in heapq.nlargest(k, counts.items(), key=lambda p: p[1])]\n```\n\nO(n log k).\n",
    ),
    (
        "function_named_like_a_stdlib_module",
        {"entry_point": "tokenize", "test": "def check(candidate):\n    assert candidate('a b') == ['a', 'b']\n"},
        "def tokenize(s):\n    return s.split()\n",
    ),
    (
        "linked_list_reversed",
        REVERSE,
        py("""
        class Solution:
            def reverseList(self, head):
                prev = None
                while head:
                    head.next, prev, head = prev, head, head.next
                return prev
    """),
    ),
    (
        "dataclass_ordering",
        {"tests": ["assert [p.x for p in sort_points([(2, 1), (1, 5)])] == [1, 2]"]},
        py("""
        from dataclasses import dataclass

        @dataclass(order=True)
        class P:
            x: int
            y: int

        def sort_points(ps):
            return sorted(P(*p) for p in ps)
    """),
    ),
    (
        "lazy_iterators",
        {
            "tests": [
                "assert list(pairs([1, 2, 3])) == [(1, 2), (1, 3), (2, 3)]",
                "assert list(double([1, 2])) == [2, 4]",
                "assert dict(zipped('ab', [1, 2])) == {'a': 1, 'b': 2}",
            ]
        },
        py("""
        import itertools

        def pairs(xs):
            return itertools.combinations(xs, 2)

        def double(xs):
            return map(lambda x: 2 * x, xs)

        def zipped(a, b):
            return zip(a, b)
    """),
    ),
    (
        "counter_against_a_dict",
        {"tests": ["assert freq('aab') == {'a': 2, 'b': 1}"]},
        "from collections import Counter\n\ndef freq(s):\n    return Counter(s)\n",
    ),
    (
        "pytest_raises_match",
        {
            "entry_point": "f",
            "test": "import pytest\n\ndef check(candidate):\n"
            "    with pytest.raises(ValueError, match='neg'):\n        candidate(-1)\n"
            "    assert candidate(2) == 2\n",
        },
        "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
    ),
    (
        "unittest_count_equal",
        {
            "test": py("""
        import unittest

        class T(unittest.TestCase):
            def test_perm(self):
                self.assertCountEqual(perm([1, 2]), [[2, 1], [1, 2]])
                self.assertDictEqual(cnt('aa'), {'a': 2})
    """)
        },
        "import itertools\nfrom collections import Counter\n\ndef perm(xs):\n"
        "    return [list(p) for p in itertools.permutations(xs)]\n\ndef cnt(s):\n    return dict(Counter(s))\n",
    ),
    (
        "rotate_matrix_in_place",
        {
            "prompt": "from typing import List\n\nclass Solution:\n"
            "    def rotate(self, matrix: List[List[int]]) -> None:\n        pass\n",
            "entry_point": "Solution().rotate",
            "test": "def check(candidate):\n    m = [[1, 2], [3, 4]]\n    row = m[0]\n    candidate(m)\n"
            "    assert m == [[3, 1], [4, 2]] and m[0] is row\n",
        },
        py("""
        class Solution:
            def rotate(self, matrix):
                n = len(matrix)
                for i in range(n):
                    for j in range(i + 1, n):
                        matrix[i][j], matrix[j][i] = matrix[j][i], matrix[i][j]
                for row in matrix:
                    row.reverse()
    """),
    ),
]

HONEST += [
    (
        "chat_imports_in_an_earlier_block",
        {"tests": ["assert top([1, 1, 2], 1) == [1]"]},
        "We need a counter:\n\n```python\nfrom collections import Counter\n```\n\nThen the function:\n\n"
        "```python\ndef top(xs, k):\n    return [x for x, _ in Counter(xs).most_common(k)]\n```\n",
    ),
    (
        "chat_helper_in_its_own_block",
        {"tests": ["assert f(3) == 9"]},
        "A helper:\n\n```python\ndef sq(x):\n    return x * x\n\nprint(sq(2))\n```\n\nAnd the answer:\n\n"
        "```python\ndef f(x):\n    return sq(x)\n```\n",
    ),
    ("chat_tilde_fence", {"tests": ["assert f(1) == 2"]}, "Here:\n\n~~~python\ndef f(x):\n    return x + 1\n~~~\n"),
    (
        "chat_thinking_then_answer",
        {"tests": ["assert f(1) == 2"]},
        "<think>\nMaybe:\n```python\ndef f(x):\n    return x\n```\nNo, it adds one.\n</think>\n\n"
        "```python\ndef f(x):\n    return x + 1\n```\n",
    ),
]

ADVERSARIAL: list[tuple[str, dict, str]] = [
    (
        "linked_list_closed_into_a_cycle",
        REVERSE,
        py("""
        class Solution:
            def reverseList(self, head):
                node = head
                while node.next:
                    node = node.next
                node.next = head  # the test's to_list walks it for ever, in the trainer
                return head
    """),
    ),
    ("shared_parts_repeated_2_to_64_times", {"tests": ["assert f(1) == 3"]}, DOUBLED),
    ("forged_set_of_a_doubling_tuple", {"tests": ["assert uniq([1, 2]) == {1, 2}"]}, FORGED_SET),
    (
        "own_math_module_isclose",
        {"test_list": ["assert math.isclose(area(2), 12.566, rel_tol=1e-3)"]},
        py("""
        class M:
            @staticmethod
            def isclose(*args, **kwargs):
                return True

        math = M()

        def area(r):
            return 0
    """),
    ),
    (
        "a_thread_that_never_ends",
        {"tests": [{"stdin": "1\n", "stdout": "1\n"}]},
        "import threading\nprint(input())\nthreading.Thread(target=threading.Event().wait).start()\n",
    ),
]
