"""A dataset row's tests, as the dataset publishes them, turned into a sandbox payload (trusted side).

Formats (a row's `test_format` field, else the reward's `format`, else recognised from the row's fields):
- `asserts`: `tests` (or MBPP's `test_list`) is a list of assert statements, e.g. `"assert add(1, 2) == 3"`;
  MBPP's `test_imports` (sanitized MBPP) and `test_setup_code` run first. Also today's `{"input": [args],
  "output": value}` items with the row's `entry_point`, which become `assert entry_point(*args) == value`.
- `check`: `test` is a program defining `check(candidate)` (HumanEval, MBPP+, EvalPlus) and `entry_point` names
  the function under test, or is an expression of the candidate's names (LeetCode's `Solution().twoSum`); the
  checker runs `check(<entry_point>)`. A program of unittest `TestCase` classes instead runs each test method.
- `stdio`: `tests` is a list of `{"stdin": ..., "stdout": ...}` (or `{"input": ..., "output": ...}` strings
  with no `entry_point`), or APPS's `input_output` ({"inputs": [...], "outputs": [...]}, JSON text or object;
  an input or output given as a list of lines is joined, as APPS's harness does). With a `fn_name` it is
  APPS's call-based format instead: each input is a list of arguments (`_call_based`).
  LiveCodeBench's `public_test_cases` / `private_test_cases` and CodeContests' `public_tests` / `private_tests` /
  `generated_tests` as published (rlx.rewards.code.published; LiveCodeBench's `functional` cases are calls).

The test program runs as HumanEval's harness runs it (prompt + completion + test, one program): the prompt's
helpers (rlx.rewards.code.program.prompt_helpers) are defined for it, every other name it reads and does not
bind is the candidate's, and each `assert` (or unittest assertion) is one test. How the completion meets the
prompt (`code_from`, the row's field, else the reward's) is decided in the sandbox (rlx.rewards.code.extract):
`completion`, `prompt_completion` (HumanEval's convention) or `fenced`; with a code prompt, its helpers run
before the candidate's code in the first and the last.
`parse` raises RowError with what is wrong; the reward runs it on every row at start (rlx.checks.check_task).
"""

from __future__ import annotations

import ast
import json

from rlx import syntax
from rlx.rewards.code.cases import RowError, Tests
from rlx.rewards.code.program import STDLIB, Instrument, free_names, harness_calls, prompt_helpers, test_cases
from rlx.rewards.code.published import code_contests, livecodebench

FORMATS = ("asserts", "check", "stdio")
CONTESTS = {"public_tests", "private_tests", "generated_tests"}  # CodeContests' fields
CODE_FROM = ("completion", "prompt_completion", "fenced")


def detect(row: dict) -> str:
    if isinstance(row.get("test"), str) and ("entry_point" in row or "TestCase" in row["test"]):
        return "check"
    if "input_output" in row or "public_test_cases" in row or CONTESTS & set(row):
        return "stdio"
    tests = row.get("tests", row.get("test_list"))
    if isinstance(tests, list) and tests and isinstance(tests[0], dict):
        first = tests[0]
        if "stdin" in first or ("entry_point" not in row and isinstance(first.get("input"), str)):
            return "stdio"
    if tests is not None:
        return "asserts"
    raise RowError(
        "no tests found: a row needs one of the fields ['tests'] or ['test_list'] (assert lines or stdin/stdout "
        "pairs), ['test', 'entry_point'] (a check(candidate) program) or ['input_output'] (APPS)"
    )


def _parse_python(source: str, what: str) -> ast.Module:
    try:
        return syntax.parse(source)
    except SyntaxError as err:
        raise RowError(f"{what} does not parse: {err.msg} (line {err.lineno})") from None


def instrument(tree: ast.Module, first: int = 0) -> tuple[str, list[str]]:
    """The program with each site recording its own verdict, and the sites' source (one label per site)."""
    transformer = Instrument(first)
    tree = ast.fix_missing_locations(transformer.visit(tree))
    return ast.unparse(tree), transformer.labels


def _assert_lines(row: dict) -> list[str]:
    tests = row.get("tests", row.get("test_list"))
    if not isinstance(tests, list) or not tests:
        raise RowError("`tests` must be a non-empty list of assert lines")
    lines = []
    for number, test in enumerate(tests):
        if isinstance(test, dict) and {"input", "output"} <= set(test):
            if not isinstance(row.get("entry_point"), str):
                raise RowError(f"tests[{number}] is an input/output test: the row needs an `entry_point` field")
            if not isinstance(test["input"], list):
                raise RowError(f"tests[{number}]['input'] must be the list of arguments")
            args = ", ".join(repr(arg) for arg in test["input"])
            test = f"assert {row['entry_point']}({args}) == {test['output']!r}"
        if not isinstance(test, str):
            raise RowError(f"tests[{number}] must be an assert line, got {type(test).__name__}")
        line = test.strip()
        tree = _parse_python(line, f"tests[{number}]")
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
            raise RowError(f"tests[{number}] must be one `assert ...` statement (got {test!r:.80})")
        lines.append(line)
    return lines


def _setup(row: dict, code_from: str) -> tuple[str, list[str], str]:
    """(setup run in the checker, classes it defines, preamble run before the candidate's code)."""
    helpers, classes = prompt_helpers(row.get("prompt"), _entry_name(row))
    setup = row.get("test_setup_code") or ""
    if not isinstance(setup, str):
        raise RowError("`test_setup_code` must be text")
    imports = row.get("test_imports") or []  # MBPP (sanitized): import lines the tests need
    if isinstance(imports, str):
        imports = [imports]
    if not (isinstance(imports, list) and all(isinstance(line, str) for line in imports)):
        raise RowError("`test_imports` must be a list of import lines")
    setup = "".join(line.strip() + "\n" for line in imports) + setup
    tree = _parse_python(setup, "`test_setup_code`")
    classes += [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    preamble = helpers if code_from != "prompt_completion" else ""
    return helpers + setup + "\n", classes, preamble


def _entry_name(row: dict) -> str | None:
    entry = row.get("entry_point")
    return entry if isinstance(entry, str) and entry.isidentifier() else None


def _assert_step(tree: ast.Module, line: str, site: int) -> str:
    """One assert line as the checker runs it: its parts cut from the source (no unparse: thousands of rows
    are parsed at start), the same calls `instrument` makes."""
    test = tree.body[0].test  # type: ignore[attr-defined]
    part = lambda node: f"({ast.get_source_segment(line, node)})"  # noqa: E731
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        check = f"__rlx_assert_eq__({site}, {part(test.left)}, {part(test.comparators[0])})"
    else:
        check = f"__rlx_assert__({site}, {part(test)})"
    return f"__rlx_enter__({site})\n{check}"


def _call_pairs(row: dict) -> Tests | None:
    """Today's `{"input": [args], "output": value}` tests with an `entry_point`, built without parsing (the
    bundled programs task checks 14k rows at start); None when the row is not purely of that kind."""
    tests, entry = row.get("tests"), row.get("entry_point")
    if not (isinstance(entry, str) and entry.isidentifier() and isinstance(tests, list) and tests):
        return None
    if (
        row.get("test_setup_code")
        or row.get("test_imports")
        or not all(isinstance(t, dict) and isinstance(t.get("input"), list) and "output" in t for t in tests)
    ):
        return None
    labels, steps = [], []
    for site, test in enumerate(tests):
        call, expected = f"{entry}({', '.join(repr(arg) for arg in test['input'])})", repr(test["output"])
        labels.append(f"assert {call} == {expected}")
        steps.append(f"__rlx_enter__({site})\n__rlx_assert_eq__({site}, ({call}), ({expected}))")
    return Tests("asserts", labels, steps=steps, proxies=[entry])


def _imports(modules: list[str], proxies: list[str]) -> str:
    """The checker's own import of each standard-library module the test reads attributes of; and of each other
    standard-library name it reads, unless the candidate bound that name to something else than a module
    (rlx.rewards.code.checker's `__rlx_standard__`)."""
    lines = [f"try:\n    import {name}\nexcept ImportError:\n    pass\n" for name in modules]
    lines += [
        f"if __rlx_standard__({name!r}):\n    try:\n        import {name}\n    except ImportError:\n        pass\n"
        for name in proxies
        if name in STDLIB
    ]
    return "".join(lines)


def _asserts(row: dict, code_from: str) -> Tests:
    if code_from != "prompt_completion" and (quick := _call_pairs(row)) is not None:
        return quick
    setup, classes, preamble = _setup(row, code_from)
    steps: list[str] = []
    labels: list[str] = []
    trees = []
    for line in _assert_lines(row):
        tree = syntax.parse(line)
        trees.append(tree)
        steps.append(_assert_step(tree, line, len(labels)))
        labels.append(line)
    modules, proxies = free_names([syntax.parse(setup), *trees], set())
    entry = _entry_name(row)
    if entry is not None and entry not in proxies:
        proxies.append(entry)
    return Tests("asserts", labels, _imports(modules, proxies) + setup, steps, proxies, classes, preamble, code_from)


def _check(row: dict, code_from: str) -> Tests:
    if not isinstance(row["test"], str):
        raise RowError("`test` must be the text of a program defining check(candidate)")
    tree = harness_calls(_parse_python(row["test"], "`test`"))
    cases = test_cases(tree)
    has_check = any(isinstance(node, ast.FunctionDef) and node.name == "check" for node in tree.body)
    if not (has_check or cases):
        raise RowError("`test` defines no check(candidate) function (nor unittest TestCase classes)")
    entry = row.get("entry_point")
    if has_check:
        try:
            entry_tree = syntax.parse_expression(entry) if isinstance(entry, str) else None
        except SyntaxError:
            entry_tree = None
        if entry_tree is None or not isinstance(entry_tree.body, ast.Name | ast.Attribute | ast.Call):
            raise RowError(f"`entry_point` must name the function under test (got {entry!r:.80})")
        steps, trees = [f"check({entry})"], [entry_tree]
    else:
        steps, trees = [f"__rlx_unittest__({cls}, {method!r})" for cls, method in cases], []
    setup, classes, preamble = _setup(row, code_from)
    program, labels = instrument(tree)
    if not labels:
        raise RowError("`test`'s check(candidate) has no assert: nothing could fail")
    classes += [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    modules, proxies = free_names([syntax.parse(setup), tree, *trees], set())
    source = _imports(modules, proxies) + setup + program + "\n"
    return Tests("check", labels, source, steps, proxies, classes, preamble, code_from)


def _stdio(row: dict) -> Tests:
    if "public_test_cases" in row:
        return livecodebench(row)
    if CONTESTS & set(row) and "tests" not in row and "input_output" not in row:
        return code_contests(row)
    if "input_output" in row:
        pairs = row["input_output"]
        if isinstance(pairs, str):
            try:
                pairs = json.loads(pairs)
            except ValueError as err:
                raise RowError(f"`input_output` is not JSON ({err})") from None
        if not (isinstance(pairs, dict) and isinstance(pairs.get("inputs"), list)):
            raise RowError('`input_output` must be {"inputs": [...], "outputs": [...]}')
        if "fn_name" in pairs:
            return _call_based(pairs)
        # APPS gives some inputs and outputs as lists of lines; its harness joins them
        inputs, outputs = [_lines(v) for v in pairs["inputs"]], pairs.get("outputs")
        outputs = [_lines(v) for v in outputs] if isinstance(outputs, list) else outputs
    else:
        tests = row.get("tests")
        if not isinstance(tests, list) or not tests:
            raise RowError("`tests` must be a non-empty list of {stdin, stdout} pairs")
        keys = ("stdin", "stdout") if "stdin" in tests[0] else ("input", "output")
        if not all(isinstance(t, dict) and set(keys) <= set(t) for t in tests):
            raise RowError(f"every item of `tests` must have {list(keys)}")
        inputs, outputs = [t[keys[0]] for t in tests], [t[keys[1]] for t in tests]
    if not isinstance(outputs, list) or len(outputs) != len(inputs) or not inputs:
        raise RowError("stdin/stdout tests need as many outputs as inputs, at least one")
    for number, text in enumerate(inputs + outputs):
        if not isinstance(text, str):
            raise RowError(f"stdin/stdout case {number % len(inputs)} holds a {type(text).__name__}, not text")
    return Tests("stdio", [f"case {i}" for i in range(len(inputs))], inputs=inputs, outputs=outputs)


def _lines(value):
    return "\n".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value


def _call_based(pairs: dict) -> Tests:
    """APPS's call-based problems: `fn_name` is called with each input (a list of arguments), as its harness
    does: a method of `Solution()` when the program defines that class, else the function; compared as
    `__rlx_assert_apps__` does (rlx.rewards.code.checker)."""
    name, inputs, outputs = pairs["fn_name"], pairs["inputs"], pairs.get("outputs")
    if not (isinstance(name, str) and name.isidentifier()):
        raise RowError(f"`input_output.fn_name` must name the function under test (got {name!r:.80})")
    if not (isinstance(outputs, list) and len(outputs) == len(inputs) and inputs):
        raise RowError("call-based tests need as many outputs as inputs, at least one")
    function = f"(Solution().{name} if 'Solution' in globals() else {name})"
    labels, steps = [], []
    for site, (args, expected) in enumerate(zip(inputs, outputs, strict=True)):
        if not isinstance(args, list):
            raise RowError(f"`input_output.inputs[{site}]` must be the list of arguments")
        call = f"{name}({', '.join(repr(arg) for arg in args)})"
        labels.append(f"assert {call} == {expected!r}")
        arguments = ", ".join(repr(arg) for arg in args)
        steps.append(f"__rlx_enter__({site})\n__rlx_assert_apps__({site}, {function}({arguments}), {expected!r})")
    return Tests("asserts", labels, steps=steps, proxies=[name, "Solution"])


def parse(row: dict, format: str, code_from: str) -> Tests:
    """The row's tests; `format`/`code_from` are the reward's defaults, the row's own fields override them."""
    code_from = row.get("code_from", code_from)
    if code_from not in CODE_FROM:
        raise RowError(f"code_from must be one of {CODE_FROM} (got {code_from!r})")
    if code_from == "prompt_completion" and not isinstance(row.get("prompt"), str):
        raise RowError("code_from=prompt_completion needs a text `prompt` (the code the completion continues)")
    kind = row.get("test_format", format)
    kind = detect(row) if kind == "auto" else kind
    if kind not in FORMATS:
        raise RowError(f"test_format must be one of {('auto', *FORMATS)} (got {kind!r})")
    tests = {"asserts": _asserts, "check": _check}[kind](row, code_from) if kind != "stdio" else _stdio(row)
    tests.code_from = code_from
    return tests


def candidate_code(completion: str, row: dict, code_from: str) -> str:
    """The text the candidate's process gets: the prompt and the completion under `prompt_completion` (the row's
    `code_from`, else the reward's), else the completion, whose code the sandbox picks (rlx.rewards.code.extract)."""
    if row.get("code_from", code_from) == "prompt_completion":
        return row["prompt"] + completion
    return completion
