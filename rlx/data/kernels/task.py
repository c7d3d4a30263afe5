"""data=kernels: generated KernelBench-style problems (rlx.data.kernels.generator) as a task for reward=triton,
with a held-out split.

Rows: {"prompt", "name", "source" (the KernelBench task file), "preamble", "plan" (the reference plan, which
reward=triton's plan component checks against)}. `prompt_style=name` shows only the problem's spec,
"# add,sigmoid 16x100 f16", and the reward prepends the `preamble` (the imports) to the completion, so the tiny
model writes just the plan, the kernel and ModelNew; `prompt_style=source` shows the whole task file (for a
real model). `val_size` problems, drawn with `split_seed` (independent of the run's seed), are held out: never
trained on, never in the warm start; val/accuracy is greedy decoding's PASS rate on them.

Warm start: the reference answers of training problems with noise. With probability `noise` an example is
corrupted by one of the applicable CORRUPTIONS, chosen uniformly: errors in the code (a store without its
mask, a wrong constant, torch compute in forward, the kernel never launched), in the plan only (the code is
right but the plan misstates the block or the masking) or in both (a plan with half the block, or without the
mask a row needs, and code that follows it). tests/rewards check what each costs: correctness, the plan, or both.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable

from rlx.data.kernels.generator import IMPORTS, Problem, generate
from rlx.data.kernels.ops import DTYPES
from rlx.data.task import Task


def _sub(pattern: str, new: str | Callable, where: str = "all") -> Callable[[str], str | None]:
    """A corruption: the first match of `pattern` replaced (in the plan line, the code, or anywhere); None
    where it does not apply."""

    def corrupt(text: str) -> str | None:
        plan, _, code = text.partition("\n")
        target = {"plan": plan, "code": code, "all": text}[where]
        changed = re.sub(pattern, new, target, count=1, flags=re.M)
        if changed == target:
            return None
        return {"plan": f"{changed}\n{code}", "code": f"{plan}\n{changed}", "all": changed}[where]

    return corrupt


def _half_block(text: str) -> str | None:
    """Plan and launch both use half the block: consistent, but half of every row is never computed."""
    found = re.search(r"B=(\d+)", text)
    if found is None or "B=triton.next_power_of_2(" not in text:
        return None
    text = text.replace(found.group(0), f"B={int(found.group(1)) // 2}", 1)
    return re.sub(r"(B=triton\.next_power_of_2\(\w+\.shape\[1\]\))", r"\1//2", text)


def _drop_masks(text: str) -> str | None:
    """A plan without the mask the row needs, and code that follows it (no mask, no fill, no where)."""
    if "mask c<n" not in text:
        return None
    text = text.replace("mask c<n", "no mask").replace(" m=c<n\n", "").replace(",mask=m", "")
    text = re.sub(r",other=(-?float\(\"\w+\"\)|[\d.]+)", "", text)
    return re.sub(r"tl\.where\(m,(.*),0\.0\)$", r"\1", text, flags=re.M)


# name: corruption. Each turns a reference answer into one that loses its correctness, its plan, or both.
CORRUPTIONS: dict[str, Callable[[str], str | None]] = {
    "unmasked_store": _sub(r"(tl\.store\(o\+r\*n\+c,.*),mask=m\)$", r"\1)", "code"),  # writes past the row
    "wrong_constant": _sub(r"(?<!other=)\b([01])\.0\b", lambda m: "0.5" if m.group(1) == "0" else "2.0", "code"),
    "torch_fallback": _sub(r"return y$", "return torch.relu(y)", "code"),  # torch compute in forward
    "never_launched": _sub(r"(\.shape\[1\]\)\))$", r"\1 if False else None", "code"),
    "plan_block": _sub(r"B=(\d+)", lambda m: f"B={2 * int(m.group(1))}", "plan"),  # code right, plan wrong
    "plan_mask": _sub(r"(mask c<n|no mask)$", lambda m: "no mask" if m.group(1) == "mask c<n" else "mask c<n", "plan"),
    "half_block": _half_block,  # plan and code: half of every row is never computed
    "no_mask": _drop_masks,  # plan and code: out-of-bounds reads and writes
}
# What each costs: CODE_ONLY correctness (the plan line is unchanged and still agrees with the launch), PLAN_ONLY
# the plan (the code still passes); the rest both (never_launched changes only the code, but a plan cannot agree
# with a launch that never happens).
CODE_ONLY = ("unmasked_store", "wrong_constant", "torch_fallback")
PLAN_ONLY = ("plan_block", "plan_mask")


class KernelTask(Task):
    def __init__(
        self,
        prompt_style: str,
        shapes: list[list[int]],
        dtypes: list[str],
        unary: list[str],
        binary: list[str],
        rows: list[str],
        fused: bool,
        val_size: int,
        split_seed: int,
        noise: float,
        balance: str,
        max_new_tokens: int,
        warm_start_min_match: float = Task.warm_start_min_match,
        warm_start_plateau_loss: float | None = Task.warm_start_plateau_loss,
    ) -> None:
        if prompt_style not in ("source", "name"):
            raise ValueError(f"data.prompt_style must be 'source' or 'name' (got {prompt_style!r})")
        if balance not in ("family", "problem"):
            raise ValueError(f"data.balance must be 'family' or 'problem' (got {balance!r})")
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"data.noise must be a probability (got {noise})")
        unknown = [d for d in dtypes if d not in DTYPES]
        if unknown or not dtypes:
            raise ValueError(f"data.dtypes must be a non-empty list from {sorted(DTYPES)} (got {dtypes})")
        bad = [s for s in shapes if len(s) != 2 or not all(isinstance(v, int) and 1 <= v <= 4096 for v in s)]
        if bad or not shapes:
            raise ValueError(
                f"data.shapes must be a non-empty list of [rows, cols] with 1 <= rows, cols <= 4096 (got {shapes})"
            )
        problems = generate([(s[0], s[1]) for s in shapes], list(dtypes), list(unary), list(binary), list(rows), fused)
        if not 0 < val_size < len(problems):
            raise ValueError(
                f"data.val_size must be in (0, {len(problems)}): these operations, shapes, dtypes and "
                f"fused={fused} make {len(problems)} problems (got {val_size})"
            )
        longest = max(len(p.solution) for p in problems)
        if max_new_tokens <= longest:  # the char tokenizer: one token per character, plus end of sequence
            raise ValueError(
                f"data.max_new_tokens={max_new_tokens} cuts the longest answer ({longest} characters): "
                f"raise it to at least {longest + 1}"
            )
        order = list(range(len(problems)))
        random.Random(split_seed).shuffle(order)
        held = set(order[:val_size])
        self.prompt_style, self.noise, self.balance, self.max_new_tokens = prompt_style, noise, balance, max_new_tokens
        self.warm_start_min_match, self.warm_start_plateau_loss = warm_start_min_match, warm_start_plateau_loss
        self.problems = {p.name: p for p in problems}
        self.train = [self._row(p) for i, p in enumerate(problems) if i not in held]
        self.val = [self._row(p) for i, p in enumerate(problems) if i in held]

    def _row(self, problem: Problem) -> dict:
        row = {"name": problem.name, "source": problem.source, "plan": problem.plan, "preamble": IMPORTS}
        if self.prompt_style == "name":
            return {"prompt": f"# {problem.name}\n", **row}
        return {
            "prompt": f"{problem.source}\n# Write ModelNew (the same computation with Triton kernels; torch, "
            f"triton and tl are imported), after a first line `# plan: B=<block>, mask c<n` (or `no "
            f"mask`).\n",
            **row,
        }

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        rng = random.Random(seed)
        by_family: dict[str, list[dict]] = {}
        for row in self.train:
            by_family.setdefault(self.problems[row["name"]].family, []).append(row)
        families = sorted(by_family)
        examples = []
        for _ in range(count):
            row = rng.choice(by_family[rng.choice(families)] if self.balance == "family" else self.train)
            text = self.problems[row["name"]].solution
            if rng.random() < self.noise:
                applicable = [c for c in (corrupt(text) for corrupt in CORRUPTIONS.values()) if c is not None]
                text = rng.choice(applicable)
            examples.append((row["prompt"], text))
        return examples

    def fingerprint(self) -> dict:
        corpus = "\n".join(self.problems[row["name"]].solution for row in self.train)
        return {
            "task": "kernels-generated",
            "style": self.prompt_style,
            "noise": self.noise,
            "balance": self.balance,
            "train": len(self.train),
            "corpus": hashlib.sha256(corpus.encode()).hexdigest()[:16],
            "corruptions": sorted(CORRUPTIONS),
        }
