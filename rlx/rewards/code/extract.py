"""Which code of a completion runs (reward.code_from), decided in the candidate's own process: this file is copied
into the sandbox (stdlib only), so the trainer never parses a completion.

- `completion`: the completion, when it compiles; a chat answer that does not (prose around fenced blocks) runs
  its best fenced block instead.
- `fenced`: the best fenced block, else the whole completion.
- `prompt_completion`: the prompt followed by the completion, as given (HumanEval's convention).

The best block: among the fenced blocks tagged python, py, python3 or untagged (indented fences too), the last
one that defines (`def`/`class`) a name the tests call, else the last one. An example-usage block after the
solution (```` ```python\\nprint(f(3))\\n``` ````) is not taken for the solution.
"""

from __future__ import annotations

import re
import textwrap

FENCE = re.compile(r"^([ \t]*)```[ \t]*(python3?|py)?[ \t]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE | re.IGNORECASE)


def blocks(text: str) -> list[str]:
    """The Python fenced blocks of `text`, dedented, in order."""
    found = []
    for match in FENCE.finditer(text):
        found.append(textwrap.dedent(match.group(3)))
    return found


def best_block(text: str, names: list[str]) -> str | None:
    """The block that holds the solution (module docstring), or None when `text` has no Python block."""
    found = blocks(text)
    for block in reversed(found):
        for name in names:
            if re.search(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", block, re.MULTILINE):
                return block
    return found[-1] if found else None


def compiles(code: str) -> bool:
    try:
        compile(code, "<candidate>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def choose(text: str, code_from: str, names: list[str]) -> str:
    """The code that runs for `text` under `code_from`."""
    if code_from == "fenced" or (code_from == "completion" and "```" in text and not compiles(text)):
        block = best_block(text, names)
        return text if block is None else block
    return text
