"""Shrink a KernelBench problem's module-level size constants so that torch on a CPU and the Triton interpreter
(TRITON_INTERPRET=1) can run it. KernelBench sizes its problems for a GPU: level 1's activations take a
4096 x 393216 input (6 GiB), level 2's convolutions 128 images of 64 x 128 x 128.

The rewrite is textual: only the integer literals of top-level assignments change, in place, so the file
still reads as published (comments, layout, names, the expressions that derive one size from another). A
constant is scaled when it is a *size* (how many: batch, channels, features, rows, a spatial extent) and kept
when it is *structure* (what the layers do):

  kept      any name with kernel, stride, pad, dilation, groups, heads, pool, window (kernel_size,
            pool_kernel_size, num_groups, num_heads, output_padding...): changing them changes the problem, and
            every one of them is small already;
            values <= min_size (dim=1, in_channels=3, a reduction axis): too small to matter;
            floats and booleans (eps, scaling factors, bias=False);
  scaled    every other integer literal, alone (`batch_size = 128`), as a constant expression
            (`N = 2048 * 2`, evaluated) or inside a tuple (`input_shape = (32768,)`,
            `depth, height, width = 16, 32, 32`): v -> max(floor, ceil(v * scale)), plus one where
            scaling made an odd size even (4095 -> 257: KernelBench's irregular sizes test the masks).

One scale for the whole file keeps the problem's proportions; fit() picks it per problem, the largest power of
1/2 under which the problem's tensors hold at most a budget of elements (counted on torch's meta device by
rlx.data.kernelbench.probe, or read from get_inputs by rlx.data.kernelbench.shapes).

The floor keeps the problem valid: for a size the layers are not built from (a spatial extent, a sequence
length) it is min_size raised to the file's widest window (largest kernel x largest dilation, plus the largest
pool), so a convolution and the pooling after it still have input left (a 9-wide kernel with dilation 3 spans
25 columns); for the layers' own sizes (channels, features) and the batch it is min_size. A scaled size the
layers are built from (get_init_inputs or class Model reads it: channels, features) that was a multiple of a
kept group count (`groups`, `num_groups`, `num_heads`) is rounded up to a multiple of every such count again,
so GroupNorm, grouped convolutions and attention heads still divide their channels; the batch and spatial sizes
are not. Sizes written as expressions of other names (`groups = in_channels`, `bias_shape = (out_channels, 1,
1)`) follow the names they read. Sizes written inside functions (`torch.rand(batch_size, 3, 224, 224)` in
get_inputs) are not seen: they keep KernelBench's values (data=kernelbench leaves out a problem that stays over
its budget, and names it).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from rlx import syntax
from rlx.data.kernelbench.shapes import input_elements

STRUCTURE = re.compile(r"kernel|stride|pad|dilation|groups|heads|pool|window", re.IGNORECASE)
GROUP_COUNT = re.compile(r"groups|heads", re.IGNORECASE)
POOL = re.compile(r"pool|window", re.IGNORECASE)
KERNEL = re.compile(r"kernel", re.IGNORECASE)  # a convolution's width (a name with pool in it is a pool's)
DILATION = re.compile(r"dilation", re.IGNORECASE)
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


@dataclass(frozen=True)
class Literal:
    """One integer literal (or constant integer expression) of a top-level assignment."""

    name: str  # the name it is assigned to (for a tuple value: the whole tuple's name)
    value: int
    node: ast.expr  # where it is in the source


def constant_int(node: ast.expr) -> int | None:
    """The value of an integer literal or an arithmetic expression of them (`2048 * 2`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = constant_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = constant_int(node.left), constant_int(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and not 0 <= right <= 64):
            return None
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            return None
        return OPERATORS[type(node.op)](left, right)
    return None


def top_level_literals(tree: ast.Module) -> list[Literal]:
    """Every integer literal a top-level assignment binds to a name, in source order."""
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                elements = value.elts if isinstance(value, ast.Tuple) else [value]
                found += [Literal(target.id, v, e) for e in elements if (v := constant_int(e)) is not None]
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                for name, element in zip(target.elts, value.elts, strict=True):
                    v = constant_int(element)
                    if isinstance(name, ast.Name) and v is not None:
                        found.append(Literal(name.id, v, element))
    return found


def floor_for(literals: list[Literal], min_size: int) -> int:
    """The least a scaled size becomes: min_size, or the widest window the file's layers slide (largest
    kernel/pool extent x largest dilation, plus the largest pool), whichever is larger."""
    kernels = [x.value for x in literals if KERNEL.search(x.name) and not POOL.search(x.name) and x.value > 0]
    dilations = [x.value for x in literals if DILATION.search(x.name) and x.value > 0]
    pools = [x.value for x in literals if POOL.search(x.name) and x.value > 0]
    window = max(kernels, default=1) * max(dilations, default=1) + max(pools, default=0)
    return max(min_size, window)


def scaled(value: int, scale: float, floor: int, group_counts: list[int]) -> int:
    """max(floor, ceil(value * scale)), then the next multiple of every group count `value` was a multiple of,
    odd if `value` is (KernelBench's irregular sizes, 4095 or 8205, are there to test the masks); never more
    than `value`."""
    step = math.lcm(1, *(g for g in group_counts if value % g == 0))  # divides value: odd when value is
    multiple = -(-max(floor, math.ceil(value * scale)) // step)
    if value % 2 and not multiple % 2:
        multiple += 1
    return min(value, multiple * step)


def constructor_names(tree: ast.Module) -> set[str]:
    """The module-level names the layers are built from: those get_init_inputs() or class Model reads, and the
    names their own assignments read (`bias_shape = (out_channels, 1, 1)`). A group count constrains these
    (channels, features), never the batch or a spatial size."""
    reads: dict[str, set[str]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
            for name in names:
                reads.setdefault(name, set()).update(used)
    roots = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef) and n.name == "get_init_inputs")
        or (isinstance(n, ast.ClassDef) and n.name == "Model")
    ]
    pending = [n.id for root in roots for n in ast.walk(root) if isinstance(n, ast.Name)]
    found: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending += reads.get(name, ())
    return found


def shrink_sizes(source: str, scale: float, min_size: int) -> tuple[str, dict[str, tuple[int, int]]]:
    """(the source with its size constants scaled, {name: (published value, new value)} for each changed one).

    Args:
        source: a KernelBench problem file (it must parse).
        scale: the factor each size is multiplied by, in (0, 1].
        min_size: sizes at or below it are kept, and no size is scaled below it (see floor_for).
    """
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1] (got {scale})")
    tree = syntax.parse(source)
    literals = top_level_literals(tree)
    floor = floor_for(literals, min_size)
    group_counts = [x.value for x in literals if GROUP_COUNT.search(x.name) and x.value > 1]
    layers = constructor_names(tree)
    edits: dict[int, tuple[ast.expr, int]] = {}  # by node: `height = width = 128` binds one literal twice
    changed: dict[str, tuple[int, int]] = {}
    kept = {id(x.node) for x in literals if STRUCTURE.search(x.name)}  # `stride = size = 4`: structure wins
    for literal in literals:
        if id(literal.node) in kept or literal.value <= min_size:
            continue
        if literal.name in layers:  # channels, features: a multiple of the group counts, any size
            new = scaled(literal.value, scale, min_size, group_counts)
        else:  # what the windows slide over (a batch has no window)
            new = scaled(literal.value, scale, min_size if "batch" in literal.name.lower() else floor, [])
        if new != literal.value:
            edits[id(literal.node)] = (literal.node, new)
            changed.setdefault(literal.name, (literal.value, new))
    return replace_nodes(source, list(edits.values())), changed


def replace_nodes(source: str, edits: list[tuple[ast.expr, int]]) -> str:
    """The source with each node's text replaced by the integer given for it (the rest byte for byte)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    data = source.encode()

    def offset(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[line - 1] + col

    spans = sorted(
        (
            (offset(n.lineno, n.col_offset), offset(n.end_lineno or n.lineno, n.end_col_offset or 0), v)
            for n, v in edits
        ),
        reverse=True,
    )
    for start, end, value in spans:
        data = data[:start] + str(value).encode() + data[end:]
    return data.decode()


@dataclass(frozen=True)
class Fitted:
    source: str  # the problem with its sizes scaled (the published source where nothing changed)
    changed: dict[str, tuple[int, int]]  # {name: (published value, new value)}
    scale: float  # the factor the sizes were scaled by (1.0: as published)
    elements: int | None  # what `measure` counted at that scale; None: it could not tell
    measured_by: str = "source"  # "source": get_inputs read statically; "meta": inputs and output, run on meta


def fit(
    source: str,
    max_elements: int,
    min_size: int,
    measure: Callable[[str], int | None] = input_elements,
    scale: float = 1.0,
) -> Fitted:
    """The problem with its sizes scaled by the largest power of 1/2, from `scale` down, that brings
    `measure(source)` (by default the elements of get_inputs()'s tensors, read from the source:
    rlx.data.kernelbench.shapes) down to `max_elements`, or as far as the floors allow; a scale at which `measure`
    cannot size the problem ends the search. A problem `measure` cannot size at `scale` is returned so, unmeasured."""
    new, changed = shrink_sizes(source, scale, min_size) if scale < 1 else (source, {})
    fitted = Fitted(new, changed, scale, measure(new))
    while fitted.elements is not None and fitted.elements > max_elements:
        scale /= 2
        new, changed = shrink_sizes(source, scale, min_size)
        found = measure(new)
        if found is None or found >= fitted.elements:  # it broke, or the floors hold every size
            break
        fitted = Fitted(new, changed, scale, found)
    return fitted
