"""A KernelBench problem file as KernelBench ships it (KernelBench/level<N>/<id>_<Name>.py): `class Model`
(an nn.Module), module-level size constants, `get_inputs()` (the forward's arguments) and `get_init_inputs()`
(the constructor's). Read statically: nothing in the file runs in the trainer (the reward runs it in its
sandbox).

KernelBench numbers a problem by its file name's prefix (`19_ReLU.py` is problem 19) and takes the level from
the directory (`level2`); a file without a number still loads here (your own problems), after the numbered ones.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from rlx import syntax
from rlx.errors import ConfigError

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
FORMAT = (
    "a KernelBench problem defines, at module level, `class Model(nn.Module)` with a forward, "
    "`get_inputs()` returning the forward's arguments and `get_init_inputs()` returning the constructor's "
    "(docs/kernelbench.md)"
)
LEVEL = re.compile(r"^level(\d+)$")


@dataclass(frozen=True)
class Problem:
    path: Path
    name: str  # the file's stem: "19_ReLU"
    problem_id: int | None  # the file name's numeric prefix (KernelBench's problem id), if any
    source: str  # the file as published


def problem_error(source: str) -> str | None:
    """Why `source` is not a KernelBench problem file, or None when it is one."""
    try:
        tree = syntax.parse(source)
    except SyntaxError as err:
        return f"it does not parse (line {err.lineno}: {err.msg})"
    except (ValueError, RecursionError, MemoryError) as err:
        return f"it does not parse ({type(err).__name__})"
    defined = {
        node.name: node for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        return f"it defines no {' and no '.join(f'`{m}`' for m in missing)} at module level"
    model = defined["Model"]
    if not isinstance(model, ast.ClassDef):
        return "its `Model` is not a class"
    if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        return "its `Model` class has no forward method"
    for name in ("get_inputs", "get_init_inputs"):
        if not isinstance(defined[name], ast.FunctionDef):
            return f"its `{name}` is not a plain function"
    return None


def read_problem(path: Path, where: str) -> Problem:
    """The problem in `path`; a ConfigError that starts with `where` (the argument that named it,
    `data.path=...`) and names the file and the fix when it is not one."""
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: {path.name} is not UTF-8 text, so not a KernelBench problem: {FORMAT}") from None
    except OSError as err:
        raise ConfigError(f"{where}: {path.name} cannot be read ({err.strerror})") from None
    why = problem_error(source)
    if why is not None:
        raise ConfigError(
            f"{where}: {path.name} is not a KernelBench problem: {why}. {FORMAT[0].upper()}{FORMAT[1:]}; fix the "
            f"file, or move it out of the directory"
        )
    prefix = path.stem.split("_", 1)[0]
    return Problem(path, path.stem, int(prefix) if prefix.isdigit() else None, source)


def problem_files(directory: Path) -> list[Path]:
    """The directory's .py files in KernelBench's order (problem id, then name; unnumbered files last);
    hidden files and `__init__.py`-style names are not problems."""

    def order(path: Path) -> tuple[int, int, str]:
        prefix = path.stem.split("_", 1)[0]
        return (0, int(prefix), path.name) if prefix.isdigit() else (1, 0, path.name)

    found = [p for p in directory.iterdir() if p.suffix == ".py" and p.is_file() and not p.name.startswith((".", "_"))]
    return sorted(found, key=order)


def level_of(path: Path) -> int | None:
    """KernelBench's level of a problem directory (`.../level2` -> 2) or of a file in one; None otherwise."""
    for part in (path, path.parent) if path.suffix == ".py" else (path,):
        found = LEVEL.match(part.name)
        if found:
            return int(found.group(1))
    return None
