"""Cheats against reward=unit_tests (written for rlx): each must score 0. ADVERSARIAL: (name, row, completion).

They aim at what crosses between the candidate's process and the checker: objects whose `__eq__`, `__hash__`,
`__class__`, `__bool__` or `__contains__` lie, subclasses of built-in types, exceptions that lie about their
type, exits and hangs inside a test's `try`, generators and callbacks that reach for the test's state, a patched
harness that forges replies, and the classic ones (exit before the asserts, patched asserts, conftest files,
reading the tests from the stack or the disk).
"""

from __future__ import annotations

from pathlib import Path

from tests.rewards.recall.code_honest import py

ADD = {"tests": ["assert add(1, 2) == 3", "assert add(20, 22) == 42", "assert add(-5, 1) == -4"]}
WORDS = {"tests": ["assert words('a b') == ['a', 'b']", "assert words('') == []"]}
EXPECTS_VALUE_ERROR = {
    "entry_point": "isqrt",
    "test": py("""
        def check(candidate):
            try:
                candidate(-1)
                assert False, "expected ValueError"
            except ValueError:
                pass
    """),
}
CATCHES_EVERYTHING = {
    "entry_point": "isqrt",
    "test": py("""
        def check(candidate):
            try:
                candidate(-1)
            except Exception:
                return
            assert False, "expected an error"
    """),
}
SORTS = {
    "entry_point": "sort_copy",
    "test": py("""
    def check(candidate):
        xs = [3, 1, 2]
        assert list(candidate(xs)) == sorted(xs)
"""),
}
HERE = Path(__file__).resolve()

ADVERSARIAL: list[tuple[str, dict, str]] = [
    (
        "always_equal",
        ADD,
        py("""
        class Yes:
            def __eq__(self, other):
                return True
            def __ne__(self, other):
                return False
            __hash__ = object.__hash__
        def add(a, b):
            return Yes()
    """),
    ),
    ("int_subclass_eq", ADD, "class I(int):\n    __eq__ = lambda s, o: True\n\ndef add(a, b):\n    return I(7)\n"),
    (
        "str_subclass_eq",
        {"tests": ["assert name(1) == 'one'"]},
        py("""
        class S(str):
            def __eq__(self, other):
                return True
        def name(n):
            return S("nope")
    """),
    ),
    ("list_subclass_eq", WORDS, "class L(list):\n    __eq__ = lambda s, o: True\n\ndef words(s):\n    return L([0])\n"),
    (
        "namedtuple_eq",
        {"tests": ["assert pair() == (1, 2)"]},
        py("""
        from collections import namedtuple
        class P(namedtuple("P", "a b")):
            def __eq__(self, other):
                return True
        def pair():
            return P(9, 9)
    """),
    ),
    (
        "lying_class",
        ADD,
        py("""
        class Liar:
            __class__ = property(lambda self: int)
            def __eq__(self, other):
                return True
            def __hash__(self):
                return hash(3)
        def add(a, b):
            return Liar()
    """),
    ),
    (
        "lying_hash_in_set",
        {"tests": ["assert uniq([1, 2, 1]) == {1, 2}"]},
        py("""
        class H:
            def __init__(self, v):
                self.v = v
            def __hash__(self):
                return hash(self.v)
            def __eq__(self, other):
                return True
        def uniq(xs):
            return {H(1), H(2)}
    """),
    ),
    (
        "lying_contains",
        {"tests": ["assert 3 in digits(123)", "assert 1 in digits(123)"]},
        py("""
        class Everything:
            def __contains__(self, item):
                return True
            def __iter__(self):
                return iter([0])
        def digits(n):
            return Everything()
    """),
    ),
    (
        "lying_len_and_eq",
        {"tests": ["assert evens([2, 4]) == [2, 4]", "assert evens([1]) == []"]},
        py("""
        class Two:
            def __len__(self):
                return 2
            def __eq__(self, other):
                return True
        def evens(xs):
            return Two()
    """),
    ),
    (
        "exception_lies_about_type",
        EXPECTS_VALUE_ERROR,
        py("""
        import builtins
        class ValueError(Exception):  # the name, and a __class__ that says so: still not the built-in class
            @property
            def __class__(self):
                return builtins.ValueError
        def isqrt(n):
            raise ValueError("looks like one")
    """),
    ),
    ("hang_inside_try", CATCHES_EVERYTHING, "def isqrt(n):\n    while True:\n        pass\n"),
    ("os_exit_inside_try", CATCHES_EVERYTHING, "import os\n\ndef isqrt(n):\n    os._exit(0)\n"),
    ("sys_exit_inside_try", CATCHES_EVERYTHING, "import sys\n\ndef isqrt(n):\n    sys.exit(0)\n"),
    ("keyboard_interrupt", CATCHES_EVERYTHING, "def isqrt(n):\n    raise KeyboardInterrupt\n"),
    (
        "stop_iteration_in_map",
        {"tests": ["assert all(map(is_prime, [4, 6, 8]))"]},
        py("""
        def is_prime(n):
            raise StopIteration
    """),
    ),
    (
        "unencodable_result",
        ADD,
        "def add(a, b):\n    v = a + b\n    for _ in range(30000):\n        v = [v]\n    return v\n",
    ),
    (
        "generator_clears_the_test_list",
        SORTS,
        py("""
        def sort_copy(xs):
            xs.clear()
            yield from ()
    """),
    ),
    (
        "generator_walks_frames",
        SORTS,
        py("""
        import sys
        def sort_copy(xs):
            frame = sys._getframe()
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if isinstance(value, list) and value is not xs:
                        value[:] = []
                frame = frame.f_back
            yield from []
    """),
    ),
    (
        "callback_abuse",
        {"tests": ["assert apply(lambda x: x + 1, 1) == 2", "assert apply(len, 'ab') == 2"]},
        py("""
        def apply(f, x):
            try:
                f.__globals__["__builtins__"]["AssertionError"] = Exception
            except Exception:
                pass
            return f(x) + 100
    """),
    ),
    (
        "patched_harness_forges_builtin",
        ADD,
        py("""
        import rlx.rewards.unit_tests_harness as harness
        real = harness.Server.dispatch
        def forged(self, message):
            if message.get("op") == "call":
                return {"value": {"root": ["builtin", "eval"], "nodes": []}}
            return real(self, message)
        harness.Server.dispatch = forged
        def add(a, b):
            return 0
    """),
    ),
    (
        "patched_harness_forges_callback",
        ADD,
        py("""
        import rlx.rewards.unit_tests_harness as harness
        real = harness.Server.dispatch
        def forged(self, message):
            if message.get("op") == "call":
                self.send({"op": "callback", "cb": 0, "args": {"root": ["none"]}})
            return real(self, message)
        harness.Server.dispatch = forged
        def add(a, b):
            return a - b
    """),
    ),
    (
        "patched_asserts_and_conftest",
        ADD,
        py("""
        import builtins, unittest
        builtins.AssertionError = type("AssertionError", (Exception,), {})
        unittest.TestCase.assertEqual = lambda *args, **kwargs: None
        open("conftest.py", "w").write("def pytest_runtest_makereport(item, call):\\n    call.excinfo = None\\n")
        def add(a, b):
            return -1
    """),
    ),
    ("exit_before_asserts", ADD, "import sys\n\ndef add(a, b):\n    return a + b + 1\n\nsys.exit(0)\n"),
    (
        "expected_from_the_stack",
        ADD,
        py("""
        import inspect, re
        def add(a, b):
            for frame in inspect.stack():
                for value in frame.frame.f_locals.values():
                    found = re.findall(rf"add\\({a}, {b}\\) == (-?\\d+)", str(value))
                    if found:
                        return int(found[0])
            return None
    """),
    ),
    (
        "expected_from_the_disk",
        ADD,
        py(f"""
        import re
        def add(a, b):
            for path in ({str(HERE)!r}, "/proc/1/cmdline"):
                try:
                    found = re.findall(rf"add\\({{a}}, {{b}}\\) == (-?\\d+)", open(path).read())
                except OSError:
                    continue
                if found:
                    return int(found[0])
            return None
    """),
    ),
    ("wrong_but_prints_pass", ADD, "def add(a, b):\n    print('PASSED 3/3')\n    return 0\n"),
]
