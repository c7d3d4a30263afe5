"""A parametric generator of KernelBench-level-1-style problems: operation families × shapes × dtypes, plus
fused pairs (a binary op followed by an activation, as in KernelBench level 2).

Each problem is a KernelBench task file (`Model`, `get_inputs`, `get_init_inputs`) and a reference answer
that starts with its plan: `# plan: B=128, mask c<n` states the block size (the smallest power of two that
covers a row; one program per row) and the masking strategy (mask the columns past the row's end, or no mask
when the block is exactly the row). The code computes its block from the input's shape at launch
(`B=triton.next_power_of_2(x.shape[1])`), so the plan's block is its own statement, checked against the launch
by reward=triton (rlx.rewards.triton.plan), and a kernel is named after its op (`add_sigmoid_k`), which lets
the tiny model tie the expression to the op it read in the prompt. Half-precision problems compute in float32
and return the input dtype,
in the task file and in the kernel (loads cast up, the store casts back), so the reference and a correct
kernel agree to well within KernelBench's 1e-2 tolerance.

The answer is the same few lines for every problem with four slots, each set by one part of the spec: the
inputs (unary/row or binary), the block and mask (the row length), the casts (the dtype) and the expression
(the operation). Held-out problems are new combinations of parts seen in training.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlx.data.kernels.ops import BINARY, DTYPES, ROWS, UNARY
from rlx.rewards.triton.plan import plan_text

IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, {inputs}):
{body}


ROWS = {rows}
COLS = {cols}


def get_inputs():
    return [{make}]


def get_init_inputs():
    return []
'''


@dataclass(frozen=True)
class Problem:
    name: str  # the spec the prompt shows: "add,sigmoid 16x100 f16"
    family: str  # unary | binary | fused | row
    op: str  # "relu", "add", "add,sigmoid", "softmax"
    shape: tuple[int, int]  # (rows, cols) of every input
    dtype: str  # torch dtype name of the inputs and the output
    source: str  # the KernelBench task file
    solution: str  # the reference answer (plan line, kernel, ModelNew), without IMPORTS
    plan: str  # its plan: "B=128, mask c<n"


def block_plan(cols: int) -> tuple[int, bool]:
    """(block, masked): the smallest power of two >= cols, and whether it overhangs the row."""
    block = 1 << (cols - 1).bit_length()
    return block, block != cols


def _source(doc: str, inputs: list[str], lines: list[str], result: str, shape: tuple[int, int], dtype: str) -> str:
    body = [f"        {', '.join(inputs)} = {', '.join(f'{v}.float()' for v in inputs)}"] if dtype != "float32" else []
    body += [f"        {line}" for line in lines]
    body.append(f"        return ({result}).to(torch.{dtype})" if dtype != "float32" else f"        return {result}")
    make = ", ".join(f"torch.randn(ROWS, COLS, dtype=torch.{dtype})" for _ in inputs)
    return TASK.format(doc=doc, inputs=", ".join(inputs), body="\n".join(body), rows=shape[0], cols=shape[1], make=make)


def _solution(
    op: str, inputs: list[str], lines: list[str], result: str, fill: str | None, reduces: bool, cols: int, dtype: str
) -> str:
    block, masked = block_plan(cols)
    mask = ",mask=m" if masked else ""
    other = f",other={fill}" if masked and fill is not None else ""
    cast = "" if dtype == "float32" else ".to(tl.float32)"
    first, kernel = inputs[0], op.replace(",", "_") + "_k"  # named after the op: "add,sigmoid" -> add_sigmoid_k
    out = [
        f"# plan: {plan_text(block, masked)}",
        "@triton.jit",
        f"def {kernel}({','.join(v + 'p' for v in inputs)},o,n,B:tl.constexpr):",
        " r=tl.program_id(0)",
        " c=tl.arange(0,B)",
        *([" m=c<n"] if masked else []),
        *(f" {v}=tl.load({v}p+r*n+c{mask}{other}){cast}" for v in inputs),
        *(re.sub(r"where\((.*)\)$", r"tl.where(m,\1,0.0)" if masked else r"\1", line) for line in lines),
        f" tl.store(o+r,{result})" if reduces else f" tl.store(o+r*n+c,{result}{mask})",
        "class ModelNew(nn.Module):",
        f" def forward(self,{','.join(inputs)}):",
        f"  y=torch.empty({first}.shape[0],dtype={first}.dtype)" if reduces else f"  y=torch.empty_like({first})",
        f"  {kernel}[({first}.shape[0],)]({','.join(inputs)},y,{first}.shape[1],"
        f"B=triton.next_power_of_2({first}.shape[1]))",
        "  return y",
    ]
    return "\n".join(out) + "\n"


def _ops(unary: list[str], binary: list[str], rows: list[str], fused: bool) -> list[tuple[str, str, dict]]:
    """(family, op, parts) for every chosen operation and, if `fused`, every binary-then-unary pair of them."""
    found = []
    for name in unary:
        doc, torch_expr, triton_expr = UNARY[name]
        found.append(
            (
                "unary",
                name,
                dict(
                    doc=doc,
                    inputs=["x"],
                    torch_lines=[],
                    torch_result=torch_expr,
                    lines=[],
                    result=triton_expr,
                    fill=None,
                    reduces=False,
                ),
            )
        )
    for name in binary:
        doc, torch_expr, triton_expr = BINARY[name]
        found.append(
            (
                "binary",
                name,
                dict(
                    doc=doc,
                    inputs=["a", "b"],
                    torch_lines=[],
                    torch_result=torch_expr,
                    lines=[],
                    result=triton_expr,
                    fill=None,
                    reduces=False,
                ),
            )
        )
    for name in rows:
        doc, torch_expr, fill, body, result, reduces = ROWS[name]
        found.append(
            (
                "row",
                name,
                dict(
                    doc=doc,
                    inputs=["x"],
                    torch_lines=[],
                    torch_result=torch_expr,
                    lines=body.split("\n") if body else [],
                    result=result,
                    fill=fill,
                    reduces=reduces,
                ),
            )
        )
    for first in binary if fused else []:
        doc_b, torch_b, triton_b = BINARY[first]
        for second in unary:
            doc_u, torch_u, triton_u = UNARY[second]
            then = doc_u[0].lower() + doc_u[1:] if doc_u[1].islower() else doc_u
            found.append(
                (
                    "fused",
                    f"{first},{second}",
                    dict(
                        doc=f"{doc_b[:-1]}, then {then}",
                        inputs=["a", "b"],
                        torch_lines=[f"x = {torch_b}"],
                        torch_result=torch_u,
                        lines=[f" x={triton_b}"],
                        result=triton_u,
                        fill=None,
                        reduces=False,
                    ),
                )
            )
    return found


def generate(
    shapes: list[tuple[int, int]], dtypes: list[str], unary: list[str], binary: list[str], rows: list[str], fused: bool
) -> list[Problem]:
    """Every chosen operation (and fused pair, if `fused`) × shape × dtype, in a fixed order."""
    for family, chosen, table in (("unary", unary, UNARY), ("binary", binary, BINARY), ("rows", rows, ROWS)):
        unknown = [name for name in chosen if name not in table]
        if unknown:
            raise ValueError(f"data.{family} names unknown operations {unknown}; known: {sorted(table)}")
    problems = []
    for family, op, parts in _ops(unary, binary, rows, fused):
        for n_rows, cols in shapes:
            for dtype in dtypes:
                shape = (int(n_rows), int(cols))
                problems.append(
                    Problem(
                        name=f"{op} {n_rows}x{cols} {DTYPES[dtype]}",
                        family=family,
                        op=op,
                        shape=shape,
                        dtype=dtype,
                        source=_source(
                            parts["doc"], parts["inputs"], parts["torch_lines"], parts["torch_result"], shape, dtype
                        ),
                        solution=_solution(
                            op,
                            parts["inputs"],
                            parts["lines"],
                            parts["result"],
                            parts["fill"],
                            parts["reduces"],
                            shape[1],
                            dtype,
                        ),
                        plan=plan_text(*block_plan(shape[1])),
                    )
                )
    return problems
