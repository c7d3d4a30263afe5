"""A row's test program and prompt, read in the trainer (the dataset's code, never the completion).

- `prompt_helpers`: what a code prompt defines for the test program, as HumanEval's harness runs prompt +
  completion + test as one program: its imports, its constants (`MOD = 10**9 + 7`), and the functions and
  classes it writes in full (HumanEval/32's `poly`, /38's `encode_cyclic`, LeetCode's `ListNode` and
  `list_node`). Its stubs (a body that is only a docstring, `pass` or `...`; a class of stubs, LeetCode's
  `class Solution`) are the candidate's to write, so the test program sees the candidate's. The helpers run in
  the checker (the dataset's versions: a completion that redefines `poly` changes nothing the test computes) and
  before the candidate's code.
- `free_names`: the names a test program reads and never binds: a name of the standard library that the test
  only reads attributes of is imported in the checker (`math.isclose` stays the real one, whatever the
  candidate bound to `math`); every other one is the candidate program's global of that name (the function under
  test, `Solution`, a constant, a function of its own named `tokenize`), reached by request.
- `Instrument`: every `assert` is one test (a site); so is a unittest assertion call (`self.assertEqual(...)`,
  `tc.assertRaises(ValueError, f, -1)`) and a `with ...assertRaises(...)` / `with pytest.raises(...)` block.
"""

from __future__ import annotations

import ast
import builtins
import sys

from rlx import syntax

BUILTINS = frozenset(dir(builtins))
STDLIB = frozenset(sys.stdlib_module_names)
ASSERTION_PREFIXES = ("assert", "fail")
RAISES_CONTEXTS = ("raises", "warns")  # pytest.raises / pytest.warns, besides unittest's assert* contexts


def parse_prompt(prompt: str) -> ast.Module | None:
    """The prompt as a program (one that ends in a bare `def f(x):` gets a body), or None when it is not code."""
    for text in (prompt, prompt.rstrip() + "\n    pass\n"):
        try:
            return syntax.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def is_stub(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return all(
            isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            for s in node.body
        )
    if isinstance(node, ast.ClassDef):
        return all(is_stub(s) or isinstance(s, ast.Pass | ast.Expr) for s in node.body)
    return False


CONSTANT_PARTS: tuple[type, ...] = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Set, ast.Dict)
CONSTANT_PARTS += (ast.operator, ast.unaryop, ast.expr_context)


def _literal(node: ast.stmt) -> bool:
    """An assignment of a constant expression (`MOD = 10**9 + 7`, `DIGITS = "0123456789"`): nothing to fail."""
    value = getattr(node, "value", None)
    if not isinstance(node, ast.Assign | ast.AnnAssign) or value is None:
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    parts = list(ast.walk(value))
    small_powers = all(  # 10**9 + 7, never 10**10**10 (evaluated in the trainer)
        isinstance(n.right, ast.Constant) and isinstance(n.right.value, int) and abs(n.right.value) <= 64
        for n in parts
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow | ast.LShift)
    )
    constant = all(isinstance(n, CONSTANT_PARTS) for n in parts)
    return constant and small_powers and all(isinstance(t, ast.Name) for t in targets)


def prompt_helpers(prompt, entry: str | None = None) -> tuple[str, list[str]]:
    """(source, class names) of what the prompt defines in full (module docstring); ("", []) when it is not code."""
    tree = parse_prompt(prompt) if isinstance(prompt, str) else None
    if tree is None:
        return "", []
    kept = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        or _literal(node)
        or (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name != entry
            and not is_stub(node)
        )
    ]
    if not kept:
        return "", []
    classes = [node.name for node in kept if isinstance(node, ast.ClassDef)]
    return ast.unparse(ast.Module(kept, type_ignores=[])) + "\n", classes


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the program binds anywhere (assignments, parameters, definitions, imports, handlers)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
    return names


def free_names(trees: list[ast.AST], bound: set[str]) -> tuple[list[str], list[str]]:
    """(standard-library modules to import in the checker, names that are the candidate's) of `trees`: the names
    the test reads and never binds. A standard-library name the test only reads attributes of (`math.isclose`)
    is the checker's own import of that module, whatever the candidate bound to it; every other name is the
    candidate's global (a standard-library name among them only when the candidate bound it to something else
    than a module: its function named `tokenize`)."""
    loaded: set[str] = set()
    values: set[str] = set()  # names read otherwise than as `name.attribute`
    for tree in trees:
        bound = bound | bound_names(tree)
        bases = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loaded.add(node.id)
                if id(node) not in bases:
                    values.add(node.id)
    free = {name for name in loaded - bound - BUILTINS if not name.startswith("__rlx")}
    modules = sorted(name for name in free - values if name in STDLIB)
    return modules, sorted(free - set(modules))


def _attribute_call(node: ast.expr | None, prefixes: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith(prefixes)


class Instrument(ast.NodeTransformer):
    """Rewrites each site to record its verdict (rlx.rewards.code.checker.Sites), keeping its source as the label."""

    def __init__(self, first: int = 0) -> None:
        self.site = first
        self.labels: list[str] = []

    def _open(self, node: ast.stmt, label: str) -> tuple[int, ast.stmt]:
        site = self.site
        self.site += 1
        self.labels.append(label)
        return site, ast.copy_location(syntax.parse(f"__rlx_enter__({site})").body[0], node)

    def _close(self, node: ast.stmt, site: int) -> ast.stmt:
        return ast.copy_location(syntax.parse(f"__rlx_assert__({site}, True)").body[0], node)

    def visit_Assert(self, node: ast.Assert):
        site, enter = self._open(node, ast.unparse(node))
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            args = [ast.Constant(site), test.left, test.comparators[0]]
            call = ast.Call(ast.Name("__rlx_assert_eq__", ast.Load()), args, [])
        else:
            call = ast.Call(ast.Name("__rlx_assert__", ast.Load()), [ast.Constant(site), test], [])
        return [enter, ast.copy_location(ast.Expr(call), node)]

    def visit_Expr(self, node: ast.Expr):
        if not _attribute_call(node.value, ASSERTION_PREFIXES):
            return self.generic_visit(node)
        site, enter = self._open(node, ast.unparse(node))
        return [enter, node, self._close(node, site)]  # an assertion that fails raises: the site fails

    def visit_With(self, node: ast.With):
        contexts = [item.context_expr for item in node.items]
        if not any(_attribute_call(c, ASSERTION_PREFIXES + RAISES_CONTEXTS) for c in contexts):
            return self.generic_visit(node)
        site, enter = self._open(node, ast.unparse(node).splitlines()[0])
        node = self.generic_visit(node)  # type: ignore[assignment]
        return [enter, node, self._close(node, site)]


def harness_calls(tree: ast.Module) -> ast.Module:
    """The program without its own top-level `check(...)` / `unittest.main()` lines: running the tests is the
    checker's step (and unittest.main() would exit)."""

    def runs_tests(node: ast.stmt) -> bool:
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        return (isinstance(func, ast.Name) and func.id == "check") or (
            isinstance(func, ast.Attribute) and func.attr == "main" and getattr(func.value, "id", "") == "unittest"
        )

    tree.body = [node for node in tree.body if not runs_tests(node)]
    return tree


def test_cases(tree: ast.Module) -> list[tuple[str, str]]:
    """(class, method) of every unittest test method the program defines (classes deriving from a *TestCase)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("TestCase") for b in node.bases):
            found += [
                (node.name, f.name) for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")
            ]
    return found
