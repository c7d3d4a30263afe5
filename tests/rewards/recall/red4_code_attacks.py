"""The fourth red team's cheats against reward=unit_tests (the honest programs and the shared rows: red4_code.py).
ADVERSARIAL: (name, row, completion), each must score 0 with a label (never INFRA).

Adversarial: values that lie by their type's machinery (`__init_subclass__`, a float/dict/tuple/frozenset/
complex/bytes subclass, a class whose instances claim to be `int`, a class returned for the test to build),
exits and base exceptions of the candidate's own (and an AssertionError raised for the test), values too large
to send (10^100000, a 50 MB string), a call just under the time limit, a prompt
helper the test reads redefined, values the checker cannot walk (a list nested 10^5 deep, a list that holds
itself), signals to every process it can reach, fake result lines on stdout, finalizers and `atexit` that print
after the program, stdout swapped under the checker.
"""

from __future__ import annotations

from tests.rewards.recall.code_honest import py
from tests.rewards.recall.red4_code import ADD, COUNTS, FIND_ZERO, PAIRS, SCALE, SUMS

ADVERSARIAL: list[tuple[str, dict, str]] = [
    (
        "prompt_helper_redefined",  # the test's `poly` is the prompt's, not this one
        FIND_ZERO,
        "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n",
    ),
    (
        "init_subclass_patches_int",
        ADD,
        py("""
        class Base:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                cls.__eq__ = lambda self, other: True
                cls.__hash__ = lambda self: 0


        class Answer(Base, int):
            pass


        def add(a, b):
            return Answer(0)
    """),
    ),
    (
        "float_subclass_eq",
        SCALE,
        "class F(float):\n    def __eq__(self, o):\n        return True\n\ndef scale(x):\n    return F(0.0)\n",
    ),
    (
        "dict_subclass_eq",
        COUNTS,
        "class D(dict):\n    def __eq__(self, o):\n        return True\n\ndef counts(s):\n    return D()\n",
    ),
    (
        "tuple_subclass_eq_in_a_list",
        PAIRS,
        "class T(tuple):\n    __eq__ = lambda s, o: True\n    __hash__ = "
        "tuple.__hash__\n\ndef pairs(xs):\n    return [T(), T(), T()]\n",
    ),
    (
        "claims_to_be_int",
        ADD,
        py("""
        class Fake:
            __class__ = int

            def __eq__(self, other):
                return True

            __hash__ = object.__hash__


        def add(a, b):
            return Fake()
    """),
    ),
    (
        "base_exception_of_its_own",
        ADD,
        "class Stop(BaseException):\n    pass\n\ndef add(a, b):\n    raise Stop()\n",
    ),
    (
        "system_exit_subclass_code_0",
        ADD,
        "class Done(SystemExit):\n    code = 0\n\ndef add(a, b):\n    raise Done(0)\n",
    ),
    ("generator_exit_raised", ADD, "def add(a, b):\n    raise GeneratorExit\n"),
    ("exit_zero_at_import", ADD, "import os\nprint('3/3 passed')\nos._exit(0)\n\ndef add(a, b):\n    return a + b\n"),
    (
        "nested_a_hundred_thousand_deep",
        ADD,
        "def add(a, b):\n    value = []\n    for _ in range(100000):\n        value = [value]\n    return value\n",
    ),
    (
        "nested_just_under_the_node_limit",  # decoded here, then compared, printed and hashed by the checker
        ADD,
        "def add(a, b):\n    value = []\n    for _ in range(19_000):\n        value = [value]\n    return value\n",
    ),
    (
        "nested_dict_in_tuple_just_under_the_node_limit",
        COUNTS,
        "def counts(s):\n    value = {}\n    for _ in range(9_000):\n        value = ({'a': value},)\n"
        "    return value\n",
    ),
    ("list_that_holds_itself", ADD, "def add(a, b):\n    value = []\n    value.append(value)\n    return value\n"),
    ("dict_that_holds_itself", COUNTS, "def counts(s):\n    d = {}\n    d['a'] = d\n    return d\n"),
    (
        "kill_every_process_it_can",
        ADD,
        "import os\nimport signal\n\ndef add(a, b):\n    for pid in (-1, 1, os.getppid()):\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
        "    return a + b + 1\n",
    ),
    (
        "stdio_kill_parent_after_a_wrong_answer",
        SUMS,
        "import os\nimport signal\nimport sys\nprint(0)\nsys.stdout.flush()\n"
        "os.kill(os.getppid(), signal.SIGTERM)\nos.kill(-1, signal.SIGKILL)\n",
    ),
    (
        "fake_result_lines",
        ADD,
        'import json\nprint(json.dumps({"event": "done"}))\nprint(json.dumps({"site": 0, "passed": True}))\n\n'
        'def add(a, b):\n    print(\'{"event": "done"}\')\n    return None\n',
    ),
    (
        "atexit_exit_zero_and_finalizer",
        ADD,
        "import atexit\nimport os\nimport weakref\n\n\nclass Late:\n    pass\n\n\nlate = Late()\n"
        "weakref.finalize(late, os._exit, 0)\natexit.register(os._exit, 0)\n\n\ndef add(a, b):\n"
        "    del globals()['late']\n"
        "    return a - b\n",
    ),
    (
        "stdout_swapped_fake_markers",
        ADD,
        "import io\nimport sys\nsys.__stdout__.write('PASSED\\n')\nsys.stdout = io.StringIO()\n\n\n"
        "def add(a, b):\n    sys.stderr.write('ok\\n')\n    return a * b\n",
    ),
    (
        "recursion_error_swallowed",
        ADD,
        "import sys\nsys.setrecursionlimit(10**9)\n\ndef add(a, b):\n    return add(a, b)\n",
    ),
    (
        "huge_output",
        SUMS,
        "import sys\nsys.stdout.write('6\\n10\\n' + 'x' * (64 * 1024 * 1024))\n",
    ),
    (
        "frozenset_subclass_eq",
        {"tests": ["assert uniq([1, 1, 2]) == frozenset({1, 2})"]},
        "class F(frozenset):\n    def __eq__(self, o):\n        return True\n    __hash__ = frozenset.__hash__\n\n"
        "def uniq(xs):\n    return F()\n",
    ),
    (
        "complex_subclass_eq",
        SCALE,
        "class C(complex):\n    __eq__ = lambda s, o: True\n\ndef scale(x):\n    return C(0)\n",
    ),
    (
        "bytes_subclass_eq",
        {"tests": ["assert enc('a') == b'a'"]},
        "class B(bytes):\n    __eq__ = lambda s, o: True\n\ndef enc(s):\n    return B(b'z')\n",
    ),
    (
        "returns_a_class_whose_instances_are_equal",
        {"tests": ["assert make()() == 5"]},
        "class Any:\n    def __eq__(self, o):\n        return True\n\ndef make():\n    return Any\n",
    ),
    ("huge_integer", ADD, "def add(a, b):\n    return 10 ** 100000\n"),
    ("huge_string", {"tests": ["assert name(1) == 'one'"]}, "def name(n):\n    return 'one' + 'x' * 50_000_000\n"),
    (
        "slow_just_under_the_call_timeout",
        ADD,
        "import time\n\ndef add(a, b):\n    time.sleep(1.9)\n    return a + b + 1\n",
    ),
    ("raises_the_test_s_assertion_error", ADD, "def add(a, b):\n    raise AssertionError('expected failure')\n"),
    (
        "settrace_rewrites_the_return",
        ADD,
        py("""
        import sys


        def tracer(frame, event, arg):
            return tracer


        sys.settrace(tracer)
        sys.setprofile(tracer)


        def add(a, b):
            return 0
    """),
    ),
]
