"""Which of a candidate program's Triton kernels touch memory, for the static check (rlx.rewards.triton.static)
and the harness's plan (rlx.rewards.triton.plan): a kernel loads or stores when it calls tl.load/tl.store (or an
atomic) itself or through another of the program's kernels it calls. Kernels are the defs
rlx.rewards.triton.program resolves as decorated by triton.jit, keyed by (name, first line).
"""

from __future__ import annotations

import ast

from rlx.rewards.triton.program import Program, Refused

LOADS = {"load", "gather"}
WRITES = {"store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or"}
WRITES |= {"atomic_xchg", "atomic_xor", "atomic_store"}
Key = tuple[str, int]


def _calls(kernel: ast.AST, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in names)
            or (isinstance(n.func, ast.Name) and n.func.id in names)
        )
        for n in ast.walk(kernel)
    )


def calling(program: Program, names: set[str]) -> set[Key]:
    """Kernels that call one of `names` themselves or through the program's kernels they call."""
    found = {key for key, kernel in program.kernels.items() if _calls(kernel, names)}
    while True:
        named = {name for name, _ in found}
        more = {
            key
            for key, kernel in program.kernels.items()
            if key not in found
            and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in named
                for n in ast.walk(kernel)
            )
        }
        if not more:
            return found
        found |= more


def kernel_defs(tree: ast.Module) -> dict[Key, ast.FunctionDef]:
    """The program's kernels by (name, first line); {} where its names cannot be resolved."""
    try:
        return Program(tree).kernels  # type: ignore[return-value]
    except (Refused, RecursionError, MemoryError):
        return {}
