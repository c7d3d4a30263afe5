"""Summarise `python -m rlx env=arithmetic_retry` runs (bench/RESULTS-multiturn.md): per run directory,

- held-out greedy episodes (heldout.jsonl, every evaluation): first-turn accuracy, the second turn's success
  among the episodes that took one, and the episode accuracy;
- training (metrics.csv): the second turn's success over windows of steps, pooled over the episodes that took a
  second turn (each step's rate weighted by its count, (rollout/turns_mean − 1) · episodes per step).

- and, with `--probe POLICY_DIR ...` (a warm start's cache directory, a run's policy/), the second turn alone:
  every held-out carry problem answered with its carry dropped (the teacher's mistake), then the feedback, and
  the policy's greedy second answer, for each feedback in FEEDBACK.

    python bench/multiturn.py RUN_DIR [RUN_DIR ...]
    python bench/multiturn.py --probe POLICY_DIR [POLICY_DIR ...]
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

FEEDBACK = {"hint": " low\n{retry}", "direction": " {direction}\n{prompt}", "none": "no\n{prompt}"}
WINDOWS = [(1, 25), (26, 50), (51, 100), (101, 150), (151, 200), (201, 250)]


def held_out(run: Path) -> list[tuple[int, float, str, float]]:
    """(step, turn-1 accuracy, turn-2 passed/took, episode accuracy) per evaluation."""
    by_step: dict[int, list[dict]] = defaultdict(list)
    for line in (run / "heldout.jsonl").read_text().splitlines():
        record = json.loads(line)
        by_step[record["step"]].append(record)
    out = []
    for step, records in sorted(by_step.items()):
        if not all("episode" in r for r in records):  # a run from before held-out episodes: single answers
            continue
        turns = [r["episode"]["turns"] for r in records]
        first = sum(t[0]["status"] == "PASS" for t in turns) / len(turns)
        second = [t[1]["status"] == "PASS" for t in turns if len(t) > 1]
        episode = sum(r["status"] == "PASS" for r in records) / len(records)
        out.append((step, first, f"{sum(second)}/{len(second)}", episode))
    return out


def training(run: Path, episodes_per_step: int) -> list[tuple[str, float, float, float]]:
    """(steps, turn-1 success, pooled turn-2 success, turn-2 episodes per step) per window."""
    with (run / "metrics.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["reward/mean"]]
    out = []
    for lo, hi in WINDOWS:
        window = rows[lo - 1 : hi]
        if not window:
            continue
        first = sum(float(r["reward/turn_1_success"]) for r in window) / len(window)
        took = [(float(r["rollout/turns_mean"]) - 1) * episodes_per_step for r in window]
        rates = [float(r["reward/turn_2_success"]) for r in window]
        pooled = sum(n * p for n, p in zip(took, rates, strict=True) if not math.isnan(p)) / max(sum(took), 1e-9)
        out.append((f"{lo}-{hi}", first, pooled, sum(took) / len(window)))
    return out


def probe(policy_dir: str) -> dict[str, str]:
    """Greedy second answers after a carry-dropped first one, per feedback: right / asked."""
    # torch and transformers only for --probe (summarising runs reads files alone)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlx.data.arithmetic import ArithmeticTask, carry_dropped_sum, true_sum
    from rlx.envs.arithmetic_retry import hints
    from rlx.rollout.engine import RolloutEngine
    from rlx.rollout.generation import GenerationRequest

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(policy_dir).eval()
    tok = AutoTokenizer.from_pretrained(policy_dir)
    task = ArithmeticTask(10, 99, 500, 1234, 0.7, 4, 0.7, 0.6)  # conf/data/arithmetic.yaml's held-out split
    wrong = [
        (r, carry_dropped_sum(*r["operands"]))
        for r in task.val
        if carry_dropped_sum(*r["operands"]) != true_sum(*r["operands"])
    ]
    out = {}
    for name, feedback in FEEDBACK.items():
        contexts = []
        for row, given in wrong:
            text = feedback.format(**hints(row["prompt"], str(given), row["answer"]))
            ids = tok.encode(row["prompt"] + str(given), add_special_tokens=False) + [tok.eos_token_id]
            contexts.append(ids + tok.encode(text, add_special_tokens=False))
        request = GenerationRequest([], 4, greedy=True, prompt_ids=contexts)
        texts = RolloutEngine(False, False, False)(model, tok, request).texts
        right = sum(t == row["answer"] for t, (row, _) in zip(texts, wrong, strict=True))
        out[name] = f"{right}/{len(wrong)}"
    return out


def main(runs: list[str]) -> None:
    if runs and runs[0] == "--probe":
        for policy_dir in runs[1:]:
            print(policy_dir, probe(policy_dir))
        return
    for name in runs:
        run = Path(name)
        print(f"## {run.name}\n\nheld-out greedy episodes: step | turn 1 acc | turn 2 passed/took | episode acc")
        for step, first, second, episode in held_out(run):
            print(f"  {step:4d} | {first:.3f} | {second} | {episode:.3f}")
        print("training: steps | turn 1 success | turn 2 success (pooled) | turn-2 episodes per step")
        for steps, first, second, took in training(run, 128):
            print(f"  {steps:>7} | {first:.3f} | {second:.3f} | {took:.1f}")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
