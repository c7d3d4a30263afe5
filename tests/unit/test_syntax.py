"""rlx.syntax: tree conversions from several threads at once (CPython 3.11's AST depth counter is shared).

With rlx.syntax._LOCK a null context and TRIES = 1, the first test fails three runs of three here (2026-12-07).
"""

from __future__ import annotations

import ast
import gc
import threading
import time

import pytest

from rlx import syntax

PROGRAM = "\n".join(
    f"def f{i}(x):\n    for j in range(x):\n        y = [k for k in range(j) if k % 3]\n    return {{'a': (1, [3])}}"
    for i in range(200)
)
MISMATCH = SystemError("AST constructor recursion depth mismatch (before=36, after=30)")


@pytest.fixture
def gil_handed_over_in_every_collection():
    """A collection running Python code lets another thread take the GIL inside a conversion (the race's door)."""

    def yield_gil(phase, info):
        time.sleep(0)

    gc.callbacks.append(yield_gil)
    try:
        yield
    finally:
        gc.callbacks.remove(yield_gil)


def test_threads_at_different_depths_convert_without_a_mismatch(gil_handed_over_in_every_collection):
    errors: list[BaseException] = []
    code: list = []

    def convert(depth: int) -> None:
        if depth:  # each thread's own stack depth is what CPython writes into the shared counter
            return convert(depth - 1)
        try:
            for _ in range(8):
                code.append(syntax.compile_tree(syntax.parse(PROGRAM), "<program>"))
                syntax.parse_expression("[x for x in range(3)]")
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=convert, args=(depth,)) for depth in (0, 7, 15, 30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(code) == 32
    namespace: dict = {}
    exec(code[-1], namespace)
    assert namespace["f199"](3) == {"a": (1, [3])}


def test_a_foreign_threads_mismatch_is_converted_again():
    calls = []

    def convert():
        calls.append(1)
        if len(calls) == 1:
            raise MISMATCH
        return ast.Module([], [])

    assert isinstance(syntax._converted(convert), ast.Module)
    assert len(calls) == 2


def test_a_mismatch_every_time_and_other_system_errors_are_raised():
    def always():
        raise MISMATCH

    with pytest.raises(SystemError, match="mismatch"):
        syntax._converted(always)
    other = []

    def different():
        other.append(1)
        raise SystemError("error return without exception set")

    with pytest.raises(SystemError, match="without exception"):
        syntax._converted(different)
    assert other == [1]


def test_parse_raises_what_ast_parse_raises():
    with pytest.raises(SyntaxError):
        syntax.parse("def f(:\n")
    assert isinstance(syntax.parse_expression("1 + 2").body, ast.BinOp)
