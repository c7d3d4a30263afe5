"""The plan component of reward=triton: a completion may open with a one-line plan,

    # plan: B=128, mask c<n        (or: # plan: B=64, no mask)

stating the block size it launches with (a constexpr keyword of the launch) and its masking strategy. The
plan scores 1 when it is
  consistent with the code   every call that passes the keyword `B` passes exactly that integer literal, there
                             is at least one, and the kernel masks some tl.load/tl.store iff the plan says `mask`;
  sound for the problem      equal to the row's reference plan (field `plan`, e.g. "B=128, mask c<n": data=kernels
                             plans the smallest power-of-two block that covers a row, masked iff it overhangs),
                             where the row has one;
and 0 otherwise (no plan line, code that does not parse). Checked statically, outside the sandbox: nothing here
runs the completion. Kept apart from correctness so token-class credit can give plan tokens their own reward.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

PLAN = re.compile(r"^# plan: (\w+)=(\d+), (no mask|mask\b[^\n]*)$", re.M)


@dataclass(frozen=True)
class Plan:
    name: str  # the block's constexpr keyword
    block: int
    masked: bool


def plan_text(block: int, masked: bool) -> str:
    """What follows `# plan: ` for a block of `block` and its masking (the form data=kernels writes)."""
    return f"B={block}, " + ("mask c<n" if masked else "no mask")


def read_plan(text: str) -> Plan | None:
    """The first plan line of `text`, if any."""
    found = PLAN.search(text)
    if found is None:
        return None
    return Plan(found.group(1), int(found.group(2)), found.group(3) != "no mask")


def consistent(plan: Plan, tree: ast.AST) -> bool:
    """The code launches with the planned block (every `name=` keyword is that literal) and masks iff planned."""
    blocks = [kw.value for node in ast.walk(tree) if isinstance(node, ast.Call)
              for kw in node.keywords if kw.arg == plan.name]
    same_block = bool(blocks) and all(isinstance(v, ast.Constant) and type(v.value) is int and v.value == plan.block
                                      for v in blocks)
    memory = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("load", "store")]
    masks = any(kw.arg == "mask" for node in memory for kw in node.keywords)
    return same_block and masks == plan.masked


def plan_score(completion: str, code: str, reference: str | None) -> float:
    """1.0 for a plan consistent with `code` and (when a `reference` plan is given) equal to it, else 0.0."""
    plan = read_plan(completion)
    if plan is None:
        return 0.0
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 0.0
    sound = reference is None or read_plan(f"# plan: {reference}") == plan
    return float(sound and consistent(plan, tree))
