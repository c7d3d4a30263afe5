"""The program's time limit, held in the checker too: the test program runs here (rlx.rewards.code.checker), and
its own loops can walk what the candidate returned. A linked list of the test's `ListNode` that the candidate
closed into a cycle never ends a test's `while node: node = node.next`, and no request to the candidate is made
that could time out, so the trainer's thread would spin for ever (HumanEval's harness stops such a program at its
time limit; so does this).

`with_ticks(source)` is the test program with a call of `__rlx_tick__()` first in the body of every loop and every
function it defines (its classes' methods included): where any Python-level work without end must pass. `Clock`
is that tick: past the session's wall clock it raises the session's end (a TIMEOUT that no `except Exception` in
the test catches; a test that swallows it with a bare `except:` gets it again at the next tick), and every later
request to the candidate raises it too. Nothing else is slowed: the checker's own code and the candidate's
requests run untouched (a trace function would put the whole thread in CPython's slow tracing mode).

Not bounded: a single C-level operation the test's own code performs on the candidate's values (`2 **
candidate(n)`, `[0] * candidate(n)`): Python checks no clock inside one. The values' size is bounded where they
are built (rlx.rewards.sandbox.values: digits, parts, parts repeated through sharing).
"""

from __future__ import annotations

import ast
import time

from rlx import syntax
from rlx.rewards.base import Status
from rlx.rewards.code.remote import SessionEnded

LOOPS = ("for ", "while ", "def ", "for\t", "while\t", "def\t")  # sources without them compile as they are


class _Ticks(ast.NodeTransformer):
    def _tick(self, body: list[ast.stmt]) -> list[ast.stmt]:
        tick = ast.Expr(ast.Call(ast.Name("__rlx_tick__", ast.Load()), [], []))
        docstring = int(bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
        return [*body[:docstring], ast.copy_location(tick, body[0]), *body[docstring:]]

    def _visit(self, node):
        node = self.generic_visit(node)
        node.body = self._tick(node.body)
        return node

    visit_For = visit_AsyncFor = visit_While = visit_FunctionDef = visit_AsyncFunctionDef = _visit


def with_ticks(source: str) -> ast.Module | str:
    """`source` with a tick first in each loop and function body (module docstring); as it is without any."""
    if not any(word in source for word in LOOPS):
        return source
    return ast.fix_missing_locations(_Ticks().visit(syntax.parse(source)))


class Clock:
    """`__rlx_tick__` of one test program: raises the session's end once `deadline` has passed."""

    def __init__(self, deadline: float, client) -> None:
        self.deadline, self.client = deadline, client

    def __call__(self) -> None:
        if time.monotonic() <= self.deadline:
            return
        if self.client.dead is None:
            ended = SessionEnded("Timeout", "the program (the test's own code included) ran past reward.limits.wall_s")
            ended.status = Status.TIMEOUT  # type: ignore[attr-defined]
            self.client.dead = ended
        raise self.client.dead
