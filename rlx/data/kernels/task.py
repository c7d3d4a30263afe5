"""data=kernels: the bundled KernelBench-style problems as a task for reward=triton.

Rows: {"prompt", "name", "source" (the KernelBench task file), "preamble"}. `prompt_style=source` shows the
whole task file (for a real model); `prompt_style=name` shows only the imports and the problem's name, and
the reward prepends that `preamble` to the completion, so the tiny model writes just the kernel and
ModelNew. Train and val are the same problems (a fixed set of 27 is too small to hold some out; val
measures greedy validity/correctness on them).

Warm start: the reference solutions (`solution_style`: compact by default, the form the tiny model can learn
on a CPU in minutes) with noise: with probability `noise` an example is corrupted in one of the ways RL must
unlearn (a torch fallback, a kernel never launched, a missing mask, a wrong constant), so not everything is
right at the start.
"""

from __future__ import annotations

import random
import re

from rlx.data.kernels.problems import problems
from rlx.data.kernels.templates import IMPORTS as PREAMBLE
from rlx.data.task import Task

# (pattern in a solution, its corrupted replacement) for the readable and compact forms; an example is corrupted
# by one of those that apply to it. Each turns a passing solution into one scored 0 (tests/rewards check it).
CORRUPTIONS = (
    (r"mask=mask\)(\n+class)", r")\1"),  # the store loses its bounds mask: out-of-bounds writes
    (r"mask=mask, ?other=", "other="),  # a row load without its mask: reads past the row
    (r"(?<!other=)0\.0", "0.5"),  # wrong constant (not a masked load's fill value: that is often harmless)
    (r"return (\w+)\s*$", r"return torch.relu(\1)\n"),  # torch compute in forward
    (r"(\w+=(\d+|triton\.next_power_of_2\(cols\)))\)\n", r"\1) if False else None\n"),  # never launched
)
STYLES = {"readable": "solution", "compact": "compact"}


class KernelTask(Task):
    def __init__(self, prompt_style: str, solution_style: str, noise: float, max_new_tokens: int,
                 max_solution_chars: int, warm_start_min_match: float = Task.warm_start_min_match,
                 warm_start_plateau_loss: float | None = Task.warm_start_plateau_loss) -> None:
        if prompt_style not in ("source", "name"):
            raise ValueError(f"data.prompt_style must be 'source' or 'name' (got {prompt_style!r})")
        if solution_style not in STYLES:
            raise ValueError(f"data.solution_style must be one of {sorted(STYLES)} (got {solution_style!r})")
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"data.noise must be a probability (got {noise})")
        self.prompt_style, self.solution_style = prompt_style, solution_style
        self.noise, self.max_new_tokens = noise, max_new_tokens
        self.warm_start_min_match, self.warm_start_plateau_loss = warm_start_min_match, warm_start_plateau_loss
        found = problems()
        # With prompt_style=name the prompt already holds the imports: the answer is the rest of the file.
        answers = {name: problem[STYLES[solution_style]].removeprefix(PREAMBLE if prompt_style == "name" else "")
                   for name, problem in found.items()}
        self.solutions = {name: text for name, text in answers.items() if len(text) <= max_solution_chars}
        if not self.solutions:
            raise ValueError(f"data.max_solution_chars={max_solution_chars} leaves no problem; the shortest "
                             f"{solution_style} answer has {min(map(len, answers.values()))} characters")
        longest = max(map(len, self.solutions.values()))
        if max_new_tokens <= longest:  # the char tokenizer: one token per character, plus end of sequence
            raise ValueError(f"data.max_new_tokens={max_new_tokens} cuts the longest kept answer ({longest} "
                             f"characters): raise it to at least {longest + 1} or lower data.max_solution_chars")
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
            applicable = [(pattern, new) for pattern, new in CORRUPTIONS if re.search(pattern, text)]
            if rng.random() < self.noise and applicable:
                pattern, new = rng.choice(applicable)
                text = re.sub(pattern, new, text, count=1)
            examples.append((row["prompt"], text))
        return examples

    def fingerprint(self) -> dict:
        return {"task": "kernels", "style": self.prompt_style, "solutions": self.solution_style, "noise": self.noise,
                "names": sorted(self.solutions)}
