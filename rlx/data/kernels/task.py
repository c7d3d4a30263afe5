"""data=kernels: the bundled KernelBench-style problems as a task for reward=triton.

Rows: {"prompt", "name", "source" (the KernelBench task file), "preamble"}. `prompt_style=source` shows the
whole task file (for a real model); `prompt_style=name` shows only the imports and the problem's name, and
the reward prepends that `preamble` to the completion, so the tiny model writes just the kernel and
ModelNew. Train and val are the same problems (a fixed set of 27 is too small to hold some out; val
measures greedy validity/correctness on them).

Warm start: the reference solutions with noise: with probability `noise` an example is corrupted in one of
the ways RL must unlearn (a torch fallback, a kernel never launched, a missing mask, a wrong constant), so
not everything is right at the start.
"""

from __future__ import annotations

import random

from rlx.data.kernels.problems import problems
from rlx.data.task import Task

PREAMBLE = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
CORRUPTIONS = (
    ("mask=mask)", ")"),  # drops the bounds mask: out-of-bounds writes
    ("0.0", "0.5"),  # wrong constant
    ("return out", "return torch.relu(out)"),  # torch compute in forward
    ("BLOCK=256)\n", "BLOCK=256) if False else None\n"),  # kernel never launched
)


class KernelTask(Task):
    def __init__(self, prompt_style: str, noise: float, max_new_tokens: int, max_solution_chars: int) -> None:
        if prompt_style not in ("source", "name"):
            raise ValueError(f"data.prompt_style must be 'source' or 'name' (got {prompt_style!r})")
        self.prompt_style, self.noise, self.max_new_tokens = prompt_style, noise, max_new_tokens
        found = problems()
        self.solutions = {}
        for name, problem in found.items():
            body = problem["solution"].removeprefix(PREAMBLE) if prompt_style == "name" else problem["solution"]
            if len(body) <= max_solution_chars:
                self.solutions[name] = body
        if not self.solutions:
            raise ValueError(f"data.max_solution_chars={max_solution_chars} leaves no problem; the shortest "
                             f"solution has {min(len(p['solution']) for p in found.values())} characters")
        self.train = [self._row(name, found[name]["source"]) for name in self.solutions]
        self.val = list(self.train)

    def _row(self, name: str, source: str) -> dict:
        if self.prompt_style == "name":
            return {"prompt": f"{PREAMBLE}# {name}\n", "name": name, "source": source, "preamble": PREAMBLE}
        return {"prompt": f"{source}\n# Write ModelNew: the same computation with Triton kernels.\n",
                "name": name, "source": source, "preamble": ""}

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            row = rng.choice(self.train)
            text = self.solutions[row["name"]]
            if rng.random() < self.noise:
                old, new = rng.choice(CORRUPTIONS)
                text = text.replace(old, new, 1)
            examples.append((row["prompt"], text))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "kernels", "style": self.prompt_style, "noise": self.noise, "names": sorted(self.solutions)}
