"""Which code of a completion runs (reward.code_from), decided in the candidate's own process: this file is copied
into the sandbox (stdlib only), so the trainer never parses a completion.

- `completion`: the completion, when it compiles; a chat answer that does not (prose around fenced blocks) runs
  its best fenced block instead.
- `fenced`: the best fenced block, else the whole completion.
- `prompt_completion`: the prompt followed by the completion, as given (HumanEval's convention).

The best block: among the fenced blocks (``` or ~~~) tagged python, py, python3 or untagged (indented fences too),
the last one that defines (`def`/`class`) a name the tests call, else the last one. An example-usage block after
the solution (```` ```python\\nprint(f(3))\\n``` ````) is not taken for the solution. The blocks before it are
read as a notebook's earlier cells: their imports, functions and classes come first (an answer that imports in
one block and defines the function in the next, or puts a helper in a block of its own), their other statements
(usage, prints) do not run.
"""

from __future__ import annotations

import ast
import re
import textwrap

from rlx import syntax

FENCE = re.compile(
    r"^([ \t]*)(```|~~~)[ \t]*(python3?|py)?[ \t]*\n(.*?)^[ \t]*\2", re.DOTALL | re.MULTILINE | re.IGNORECASE
)
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def blocks(text: str) -> list[str]:
    """The Python fenced blocks of `text`, dedented, in order."""
    found = []
    for match in FENCE.finditer(text):
        found.append(textwrap.dedent(match.group(4)))
    return found


def best_block(text: str, names: list[str]) -> str | None:
    """The block that holds the solution, after the definitions of the blocks before it (module docstring), or
    None when `text` has no Python block."""
    found = blocks(text)
    if not found:
        return None
    chosen = next(
        (
            index
            for index in reversed(range(len(found)))
            for name in names
            if re.search(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", found[index], re.MULTILINE)
        ),
        len(found) - 1,
    )
    earlier = "".join(_definitions(block) for block in found[:chosen])
    return earlier + found[chosen]


def _definitions(block: str) -> str:
    """The imports, functions and classes of an earlier block, as its source ("" when it does not parse)."""
    try:
        tree = syntax.parse(block)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    lines = block.splitlines(keepends=True)
    kept = [node for node in tree.body if isinstance(node, DEFINITIONS)]
    first = lambda node: min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # noqa: E731
    return "".join("".join(lines[first(node) - 1 : node.end_lineno]) + "\n" for node in kept)


def compiles(code: str) -> bool:
    try:
        compile(code, "<candidate>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def choose(text: str, code_from: str, names: list[str]) -> str:
    """The code that runs for `text` under `code_from`."""
    fenced = "```" in text or "~~~" in text
    if code_from == "fenced" or (code_from == "completion" and fenced and not compiles(text)):
        block = best_block(text, names)
        return text if block is None else block
    return text
