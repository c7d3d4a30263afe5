"""Inputs for `python -m rlx.score`, one per reward: a dataset row, a completion that scores PASS and a wrong
one (the right answer to another row); and JSONL files for data=jsonl."""

from __future__ import annotations

import json
from pathlib import Path


def _math() -> tuple[dict, str, str]:
    return {"prompt": "12+34=", "answer": "46"}, "46", "47"


def _unit_tests() -> tuple[dict, str, str]:
    from rlx.data.programs import ProgramsTask, solution

    chain = (("add", 3), ("mul", 2), ("sub", 4))  # def f(x): return (x+3)*2-4
    return ProgramsTask._row(chain), solution(chain), solution((("add", 3), ("mul", 2), ("sub", 5)))


def _triton() -> tuple[dict, str, str]:
    from rlx.data.kernels.generator import IMPORTS, generate

    relu, sigmoid = generate([(8, 64)], ["float32"], ["relu", "sigmoid"], [], [], fused=False)
    row = {"name": relu.name, "source": relu.source, "plan": relu.plan, "preamble": IMPORTS}
    return row, relu.solution, sigmoid.solution  # sigmoid's kernel computes the wrong function for relu's task


SCORE_INPUTS = {"math": _math, "unit_tests": _unit_tests, "triton": _triton}


def write_score_inputs(reward: str, directory: Path, wrong: bool = False) -> tuple[Path, Path]:
    """(task.json, completion file) for `reward`; a reward without inputs here fails the caller's test."""
    if reward not in SCORE_INPUTS:
        raise KeyError(f"tests/e2e/fixtures.py has no known-good row for reward={reward}: add one to SCORE_INPUTS")
    row, right, other = SCORE_INPUTS[reward]()
    directory.mkdir(parents=True, exist_ok=True)
    task, answer = directory / f"{reward}_row.json", directory / f"{reward}_{'wrong' if wrong else 'answer'}.txt"
    task.write_text(json.dumps(row))
    answer.write_text(other if wrong else right)
    return task, answer


def write_jsonl(directory: Path) -> tuple[Path, Path]:
    """train.jsonl and val.jsonl for data=jsonl with reward=math: `A+B=` prompts and their answers."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, pairs in (
        ("train", [(a, b) for a in range(10, 20) for b in range(10, 14)]),
        ("val", [(a, b) for a in range(20, 24) for b in range(20, 24)]),
    ):
        path = directory / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b)}) + "\n" for a, b in pairs))
        paths.append(path)
    return paths[0], paths[1]
