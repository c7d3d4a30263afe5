"""The plan component of reward=triton: a completion may open with a one-line plan,

    # plan: B=128, mask c<n        (or: # plan: B=64, no mask)

stating the block size it launches with (a constexpr keyword of the launch) and its masking strategy. The
plan scores 1 when it is
  consistent with the code   the kernel was launched with the keyword `B` equal to the planned block, every time
                             (read at runtime by the harness: the first trial's launches), and the kernels
                             that were launched mask some tl.load/tl.store iff the plan says `mask` (a `mask=`
                             in a kernel that never runs, or outside any kernel, describes nothing);
  sound for the problem      equal to the row's reference plan (field `plan`, e.g. "B=128, mask c<n": data=kernels
                             plans the smallest power-of-two block that covers a row, masked iff it overhangs),
                             where the row has one;
and 0 otherwise (no plan line, code that does not parse or never launched a kernel). Kept apart from correctness
so token-class credit can give plan tokens their own reward; reward=triton pays it only to a PASS (a plan of a
kernel that computes the wrong thing, or that cheated, describes nothing worth rewarding).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from rlx import syntax
from rlx.rewards.triton.kernels import kernel_defs
from rlx.rewards.triton.records import Launch

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


def consistent(plan: Plan, tree: ast.Module, launches: list[Launch]) -> bool:
    """The launches used the planned block and the launched kernels mask iff planned."""
    blocks = [launch.ints[plan.name] for launch in launches if plan.name in launch.ints]
    same_block = bool(blocks) and all(type(v) is int and v == plan.block for v in blocks)
    names = {launch.kernel for launch in launches}
    memory = [
        node
        for (name, _), kernel in kernel_defs(tree).items()
        if name in names
        for node in ast.walk(kernel)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("load", "store")
    ]
    masks = any(kw.arg == "mask" for node in memory for kw in node.keywords)
    return same_block and masks == plan.masked


def plan_score(completion: str, code: str, launches: list[Launch] | None, reference: str | None) -> float:
    """1.0 for a plan consistent with `code` and the launches it made (`launches`, None where it never ran)
    and, when a `reference` plan is given, equal to it; else 0.0."""
    plan = read_plan(completion)
    if plan is None or not isinstance(launches, list) or not all(isinstance(x, Launch) for x in launches):
        return 0.0
    try:
        tree = syntax.parse(code)
        sound = reference is None or read_plan(f"# plan: {reference}") == plan
        return float(sound and consistent(plan, tree, launches))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 0.0
