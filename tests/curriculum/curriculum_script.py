"""A deterministic reward stream for sampler tests: prompts of three kinds, as in data=mixed_arithmetic.

Row i has difficulty i % 3: 0 always passes (all-pass group), 2 always fails (all-fail group), 1 passes
on completions whose position in the group is even (a mixed group, pass rate 0.5).
"""

from __future__ import annotations

GROUP = 4


def rows(n: int) -> list[dict]:
    return [{"prompt": f"p{i}", "answer": "x", "difficulty": i % 3} for i in range(n)]


def group_rewards(index: int) -> list[float]:
    kind = index % 3
    if kind == 0:
        return [1.0] * GROUP
    if kind == 2:
        return [0.0] * GROUP
    return [float(j % 2 == 0) for j in range(GROUP)]


def run_steps(sampler, steps: int, per_step: int, first_step: int = 0) -> list[dict]:
    """Drive `sampler` through the trainer's protocol (without the model); one record per step."""
    records = []
    for step in range(first_step, first_step + steps):
        sampler.begin_step(step)
        kept, rounds, picked = 0, 0, []
        while kept < per_step and rounds < sampler.max_rounds:
            indices = sampler.sample(per_step - kept)
            groups = [group_rewards(i) for i in indices]
            sampler.observe(indices, groups)
            kept += sum(sampler.keep(groups))
            rounds += 1
            picked += indices
        records.append({"indices": picked, "metrics": sampler.metrics(), "kept": kept})
    return records


def zero_variance_share(records: list[dict]) -> float:
    picked = [i for r in records for i in r["indices"]]
    return sum(1 for i in picked if i % 3 != 1) / len(picked)
