"""Helpers shared by the code rewards: the code a completion holds, and the MBPP-style assert tests split into a
call (what may be sent to the candidate) and an expected value (what must stay in the checker).

reward=unit_tests itself is rlx.rewards.code.reward.CodeTestsReward (formats: rlx.rewards.code.formats), on the
sandbox's session API (rlx.rewards.sandbox.session, harness rlx.rewards.unit_tests_harness).
"""

from __future__ import annotations

import ast
import re

from rlx import syntax

FENCE = re.compile(r"```(?:python|py)?\n(.*?)```", re.DOTALL)


def extract_code(completion: str) -> str:
    """The last fenced code block if the completion has one, else the whole completion."""
    blocks = FENCE.findall(completion)
    return blocks[-1] if blocks else completion


def parse_tests(row: dict) -> list[tuple[str, object]]:
    """(call expression, expected value) per test; a malformed test is a dataset error, raised loudly."""
    parsed = []
    for number, test in enumerate(row["tests"]):
        if isinstance(test, str):
            tree = syntax.parse(test.strip())
            node = tree.body[0] if len(tree.body) == 1 else None
            compare = getattr(node, "test", None)
            if not (
                isinstance(node, ast.Assert)
                and isinstance(compare, ast.Compare)
                and len(compare.ops) == 1
                and isinstance(compare.ops[0], ast.Eq)
            ):
                raise ValueError(f"tests[{number}] must be `assert <call> == <literal>` (got {test!r})")
            parsed.append((ast.unparse(compare.left), ast.literal_eval(compare.comparators[0])))
        elif isinstance(test, dict) and {"input", "output"} <= set(test):
            if "entry_point" not in row:
                raise ValueError(f"tests[{number}] is an input/output test: the row needs an `entry_point` field")
            args = ", ".join(repr(arg) for arg in test["input"])
            parsed.append((f"{row['entry_point']}({args})", test["output"]))
        else:
            raise ValueError(f"tests[{number}] must be an assert string or {{'input': [...], 'output': ...}}")
    if not parsed:
        raise ValueError("row has an empty `tests` list")
    return parsed
