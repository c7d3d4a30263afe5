"""A small program-synthesis task the tiny model can learn: write `f` from a one-line spec of its steps.

Prompt: "# add 3, mul 2, sub 4\n"; a correct completion: "def f(x): return (x+3)*2-4". A function is a chain
of `min_ops` to `max_ops` steps, each `add k`, `sub k` or `mul k` with k in [2, `constant_max`], applied to x
in order. The code writes the chain with the fewest parentheses: a `mul` that follows an add or sub wraps
everything before it. reward=unit_tests runs `f` on inputs the prompt never shows.

There are thousands of distinct specs (14,424 by default); the held-out split is `val_size` chains drawn with
split_seed and never trained on. Reading a spec is a local, compositional skill, so a model that learns it on the
training chains also writes the held-out ones, unlike memorising a table.

As with arithmetic, the SFT teacher is flawed, on chains with a mul after an add or sub (`difficulty` 1): with
probability `teacher_error` it loses track of the parentheses, and of those slips a share `teacher_unclosed`
opens them and never closes them ("(x+3*2-4": does not parse) while the rest drop them ("x+3*2-4": runs, wrong).
Greedy imitation of a teacher that errs more often than not learns a bug, so imitation has a ceiling, in
validity and in correctness, that the verifiable reward can break.
"""

from __future__ import annotations

import itertools
import random

from rlx.data.task import Task

OPS = {"add": "+", "sub": "-", "mul": "*"}
TEST_INPUTS = (-3, 0, 4, 7, 10)
HEADER = "def f(x): return "
MAX_CHAINS = 500_000  # every chain becomes a row in memory


def expression(chain: tuple[tuple[str, int], ...], parentheses: bool = True) -> str:
    """The chain as a Python expression in x; without `parentheses`, the teacher's bug."""
    text, additive = "x", False  # additive: the expression so far ends in a + or - at top level
    for op, k in chain:
        if op == "mul" and additive and parentheses:
            text = f"({text})"
        text = f"{text}{OPS[op]}{k}"
        additive = op != "mul"
    return text


def evaluate(chain: tuple[tuple[str, int], ...], x: int) -> int:
    for op, k in chain:
        x = x + k if op == "add" else x - k if op == "sub" else x * k
    return x


def solution(chain) -> str:
    return HEADER + expression(tuple(map(tuple, chain)))


def flawed_solution(chain) -> str:
    """The teacher's bug that runs: no parentheses (wrong when a mul follows an add or sub)."""
    return HEADER + expression(tuple(map(tuple, chain)), parentheses=False)


def unclosed_solution(chain) -> str:
    """The teacher's bug that does not parse: parentheses opened, never closed."""
    return HEADER + expression(tuple(map(tuple, chain))).replace(")", "")


class ProgramsTask(Task):
    def __init__(
        self,
        min_ops: int,
        max_ops: int,
        constant_max: int,
        val_size: int,
        split_seed: int,
        teacher_error: float,
        teacher_unclosed: float,
        max_new_tokens: int,
        warm_start_min_match: float,
        warm_start_plateau_loss: float | None,
    ) -> None:
        if not 1 <= min_ops <= max_ops <= 4:
            raise ValueError(
                f"data.min_ops/data.max_ops must satisfy 1 <= min_ops <= max_ops <= 4 (got {min_ops}, {max_ops})"
            )
        if not 2 <= constant_max <= 99:
            raise ValueError(f"data.constant_max must be in [2, 99] (got {constant_max}): constants run from 2")
        for key, value in (("teacher_error", teacher_error), ("teacher_unclosed", teacher_unclosed)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"data.{key} must be a probability (got {value})")
        steps = [(op, k) for op in OPS for k in range(2, constant_max + 1)]
        count = sum(len(steps) ** n for n in range(min_ops, max_ops + 1))
        if count > MAX_CHAINS:
            raise ValueError(
                f"data.max_ops={max_ops} with data.constant_max={constant_max} makes {count} chains, more "
                f"than the {MAX_CHAINS} rows rlx builds in memory: lower one of them"
            )
        chains = [c for n in range(min_ops, max_ops + 1) for c in itertools.product(steps, repeat=n)]
        if not 0 < val_size < len(chains):
            raise ValueError(
                f"data.val_size must be in (0, {len(chains)}) for min_ops={min_ops}, "
                f"max_ops={max_ops}, constant_max={constant_max} (got {val_size})"
            )
        longest = max(len(solution(c)) for c in chains) + 1  # + end of sequence
        if max_new_tokens < longest:
            raise ValueError(
                f"data.max_new_tokens={max_new_tokens} cannot hold the longest solution and its end "
                f"of sequence ({longest} tokens): raise it to at least {longest}"
            )
        random.Random(split_seed).shuffle(chains)
        self.train = [self._row(c) for c in chains[val_size:]]
        self.val = [self._row(c) for c in chains[:val_size]]
        self.spec = {
            "min_ops": min_ops,
            "max_ops": max_ops,
            "constant_max": constant_max,
            "val_size": val_size,
            "split_seed": split_seed,
        }
        self.teacher_error = teacher_error
        self.teacher_unclosed = teacher_unclosed
        self.max_new_tokens = max_new_tokens
        self.warm_start_min_match = warm_start_min_match
        self.warm_start_plateau_loss = warm_start_plateau_loss

    @staticmethod
    def _row(chain: tuple[tuple[str, int], ...]) -> dict:
        spec = ", ".join(f"{op} {k}" for op, k in chain)
        return {
            "prompt": f"# {spec}\n",
            "entry_point": "f",
            "chain": [list(s) for s in chain],
            "difficulty": int(expression(chain) != expression(chain, parentheses=False)),
            "tests": [{"input": [x], "output": evaluate(chain, x)} for x in TEST_INPUTS],
        }

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """`count` (prompt, completion) pairs from the flawed teacher, over training prompts only."""
        rng = random.Random(seed)
        examples = []
        for _ in range(count):
            row = rng.choice(self.train)
            if rng.random() >= self.teacher_error:
                completion = solution(row["chain"])
            elif rng.random() < self.teacher_unclosed:
                completion = unclosed_solution(row["chain"])
            else:
                completion = flawed_solution(row["chain"])
            examples.append((row["prompt"], completion))
        return examples

    def fingerprint(self) -> dict:
        return {
            "task": "programs-spec",
            **self.spec,
            "teacher_error": self.teacher_error,
            "teacher_unclosed": self.teacher_unclosed,
        }
