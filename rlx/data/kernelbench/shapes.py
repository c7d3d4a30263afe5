"""How many elements a KernelBench problem's `get_inputs()` creates, read from its source without running it.

A small abstract interpreter: the module-level constants are evaluated (numbers, tuples, arithmetic, names
bound earlier), then get_inputs' statements, where a torch factory call (`torch.rand(batch_size, *input_shape)`,
`torch.randint(0, n, (batch_size,))`, `torch.zeros(size=...)`) makes a tensor of known shape, and whatever is
done to a tensor (`.float()`, `* scale`, `.softmax(dim=-1)`, `torch.tril(A)`) keeps its shape; `x.shape` reads
it back. Anything else is unknown: the estimate is then None, and the caller keeps the problem's own sizes.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass

from rlx import syntax

FACTORIES = {"rand", "randn", "zeros", "ones", "empty", "rand_like", "randn_like", "zeros_like", "ones_like"}
SHAPE_KEEPING = {"tril", "triu", "abs", "sigmoid", "tanh", "relu", "exp", "softmax", "log_softmax", "clone", "sign"}
BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNKNOWN = object()


@dataclass(frozen=True)
class Tensor:
    shape: tuple[int, ...]


def module_constants(tree: ast.Module) -> dict[str, object]:
    """The values of the module's top-level assignments that evaluate (numbers, strings, tuples of them)."""
    env: dict[str, object] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            assign(statement.targets, evaluate(statement.value, env), env)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            assign([statement.target], evaluate(statement.value, env), env)
    return env


def assign(targets: list[ast.expr], value: object, env: dict[str, object]) -> None:
    for target in targets:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple):
            values = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Name):
                    env[element.id] = values[i] if values is not None else UNKNOWN


def evaluate(node: ast.expr, env: dict[str, object]) -> object:
    """The value of `node` (a number, str, tuple, Tensor) or UNKNOWN."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, (ast.Tuple, ast.List)):
        items: list[object] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                inner = evaluate(element.value, env)
                if not isinstance(inner, tuple):
                    return UNKNOWN
                items += inner
            else:
                items.append(evaluate(element, env))
        return UNKNOWN if any(item is UNKNOWN for item in items) else tuple(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = evaluate(node.operand, env)
        return -inner if isinstance(inner, (int, float)) else inner if isinstance(inner, Tensor) else UNKNOWN
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        return binary(node.op, evaluate(node.left, env), evaluate(node.right, env))
    if isinstance(node, ast.Attribute):
        base = evaluate(node.value, env)
        if isinstance(base, Tensor) and node.attr in ("T", "mT"):  # a transpose: the same elements
            return Tensor(base.shape[::-1])
        return base.shape if isinstance(base, Tensor) and node.attr == "shape" else UNKNOWN
    if isinstance(node, ast.Call):
        return call(node, env)
    return UNKNOWN


def binary(op: ast.operator, left: object, right: object) -> object:
    if isinstance(left, Tensor) or isinstance(right, Tensor):  # a tensor and a scalar (or the same shape)
        shapes = [x.shape for x in (left, right) if isinstance(x, Tensor)]
        return Tensor(max(shapes, key=len)) if all(x is not UNKNOWN for x in (left, right)) else UNKNOWN
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (left, right))
    if not numbers or (isinstance(op, ast.Pow) and abs(right) > 64):  # type: ignore[arg-type]
        return UNKNOWN
    try:
        return BINARY[type(op)](left, right)
    except ArithmeticError:
        return UNKNOWN


def shape_of(args: list[object]) -> tuple[int, ...] | None:
    """`torch.rand(2, 3)` and `torch.rand((2, 3))` alike."""
    dims = args[0] if len(args) == 1 and isinstance(args[0], tuple) else tuple(args)
    sizes = [d for d in dims if type(d) is int and d >= 0]
    return tuple(sizes) if len(sizes) == len(dims) else None


def call(node: ast.Call, env: dict[str, object]) -> object:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return UNKNOWN
    receiver = (
        evaluate(func.value, env) if not (isinstance(func.value, ast.Name) and func.value.id == "torch") else None
    )
    if isinstance(receiver, Tensor):  # x.float(), x.softmax(dim=-1), x.cuda(): the same shape
        return receiver
    if not (isinstance(func.value, ast.Name) and func.value.id == "torch"):
        return UNKNOWN
    args: list[object] = []
    for argument in node.args:  # `torch.rand(batch_size, *input_shape)`: the starred tuple's items
        value = evaluate(argument.value if isinstance(argument, ast.Starred) else argument, env)
        if isinstance(argument, ast.Starred) and not isinstance(value, tuple):
            return UNKNOWN
        args += list(value) if isinstance(argument, ast.Starred) and isinstance(value, tuple) else [value]
    keywords = {k.arg: evaluate(k.value, env) for k in node.keywords if k.arg}
    if any(a is UNKNOWN for a in args) and func.attr not in SHAPE_KEEPING:
        return UNKNOWN
    if func.attr in FACTORIES:
        if func.attr.endswith("_like"):
            return args[0] if args and isinstance(args[0], Tensor) else UNKNOWN
        shape = shape_of([keywords["size"]] if "size" in keywords else args)
    elif func.attr == "randint":  # (high, size) or (low, high, size)
        size = keywords.get("size", args[-1] if len(args) >= 2 else UNKNOWN)
        shape = shape_of([size])
    elif func.attr == "full":
        shape = shape_of([keywords.get("size", args[0] if args else UNKNOWN)])
    elif func.attr in SHAPE_KEEPING:
        return args[0] if args and isinstance(args[0], Tensor) else UNKNOWN
    else:
        return UNKNOWN
    return Tensor(shape) if shape is not None else UNKNOWN


def input_elements(source: str) -> int | None:
    """The number of elements of the tensors get_inputs() returns, or None where the source does not say."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    env = module_constants(tree)
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if function is None:
        return None
    for statement in function.body:
        if isinstance(statement, ast.Assign):
            assign(statement.targets, evaluate(statement.value, env), env)
        elif isinstance(statement, ast.Return) and statement.value is not None:
            returned = evaluate(statement.value, env)
            if not isinstance(returned, tuple) or any(x is UNKNOWN for x in returned):
                return None
            return sum(math.prod(x.shape) for x in returned if isinstance(x, Tensor))
        elif not isinstance(statement, ast.Expr):  # a docstring or a bare call; any other flow: unknown
            return None
    return None
