"""Python source to `ast` trees and back to code, safe to call from several threads at once.

CPython 3.11 keeps the depth counter of its AST constructor in one per-interpreter place, not per thread
(cpython gh-106905 and gh-95185). `ast.parse` (C tree to Python objects) and `compile(tree)` (the reverse)
set it from the calling thread's stack depth and compare it at the end; when another thread converts a tree in
between (the GIL changes hands inside a conversion wherever a garbage collection runs Python code), the first
raises `SystemError: AST constructor recursion depth mismatch (before=36, after=30)`. The rewards convert trees
on one thread per sandbox worker (rlx.rewards.sandbox.session.Jails.map), so a test program's row turned into
an INFRA sample about once in a few thousand. `compile` of a source string never builds Python objects: it is
unaffected and needs no lock.

Every conversion in rlx goes through here, one at a time. A thread outside rlx (a library's own `ast.parse`)
can still interleave with one of ours: the conversion is pure, so that one error is answered by converting again.
"""

from __future__ import annotations

import ast
import threading
import types
from collections.abc import Callable
from typing import TypeVar

_LOCK = threading.Lock()
TRIES = 3  # a foreign thread's conversion overlapping ours three times running is not a race but a fault
_MISMATCH = "AST constructor recursion depth mismatch"


def parse(source: str) -> ast.Module:
    """ast.parse(source), serialised with every other conversion in the process."""
    return _converted(lambda: ast.parse(source))


def parse_expression(source: str) -> ast.Expression:
    """ast.parse(source, mode="eval"), serialised like `parse`."""
    return _converted(lambda: ast.parse(source, mode="eval"))


def compile_tree(tree: ast.Module, filename: str) -> types.CodeType:
    """compile(tree, filename, "exec") of a tree built or changed in Python, serialised like `parse`."""
    return _converted(lambda: compile(tree, filename, "exec"))


T = TypeVar("T")


def _converted(convert: Callable[[], T]) -> T:
    for attempt in range(TRIES):
        try:
            with _LOCK:
                return convert()
        except SystemError as err:
            if _MISMATCH not in str(err) or attempt == TRIES - 1:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
