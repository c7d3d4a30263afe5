"""The program's time limit, held in the checker too: the test program runs here (rlx.rewards.code.checker), and
its own loops can walk what the candidate returned. A linked list of the test's `ListNode` that the candidate
closed into a cycle never ends a test's `while node: node = node.next`, and no request to the candidate is made
that could time out, so the trainer's thread would spin for ever (HumanEval's harness stops such a program at its
time limit; so does this).

`program_clock(deadline, client)` traces the test program's own frames (the code compiled from the row: setup,
steps, and the functions and classes they define) in this thread only, and once `deadline` (the session's wall
clock) has passed, the next line of test code raises the session's end (a TIMEOUT that no `except Exception` in
the test catches) and every later request to the candidate raises it too. Frames of other code (the checker's,
the standard library's) are not traced: they cost one call of the tracer when they start.

Not bounded: a single C-level operation the test's own code performs on the candidate's values (`2 **
candidate(n)`, `[0] * candidate(n)`): Python checks no clock inside one. The values' size is bounded where they
are built (rlx.rewards.sandbox.values: digits, parts, parts repeated through sharing).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from rlx.rewards.base import Status
from rlx.rewards.code.remote import SessionEnded

TEST_FILES = frozenset(("<setup>", "<test>"))  # the names the checker compiles the row's program under


@contextlib.contextmanager
def program_clock(deadline: float, client) -> Iterator[None]:
    """Trace the test program's frames in this thread until the block ends (module docstring)."""

    def expire() -> None:
        ended = SessionEnded("Timeout", "the program (the test's own code included) ran past reward.limits.wall_s")
        ended.status = Status.TIMEOUT  # type: ignore[attr-defined]
        if client.dead is None:
            client.dead = ended
        raise client.dead

    def line(frame, event, arg):
        if time.monotonic() > deadline:
            expire()
        return line

    def start(frame, event, arg):
        if frame.f_code.co_filename not in TEST_FILES:
            return None
        return line(frame, event, arg)

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        yield
    finally:
        sys.settrace(previous)
