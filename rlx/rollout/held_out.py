"""The completions a held-out evaluation scores: greedy (val/accuracy) and, with `val_samples` = k > 0, k
samples per row at the training temperature (val/pass@1, rlx.distributed.evaluation).

Why sampled as well as greedy: greedy decoding turns a near tie at one token into a whole answer, so a change
of a hundredth of a nat can flip a problem either way, and one flipped problem of 64 moves val/accuracy by
0.016. DeepSeek-R1 (arXiv 2501.12948, section 3.1) reports pass@1 over k samples at a non-zero temperature for
this reason ("greedy decoding ... results in ... significant variability across different checkpoints"); the
sampled policy is also the one RL trains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from rlx.rewards.base import Reward, Status, Verdict
from rlx.rollout.collect import Rollout, RolloutConfig, generate_and_score
from rlx.rollout.generation import GenerationRequest, Generator
from rlx.rollout.scoring import score
from rlx.seeding import eval_seed, isolated_rng


@dataclass(frozen=True)
class Scored:
    """One held-out pass: the completions and their verdicts, aligned (row i's at i·k .. i·k + k − 1)."""

    texts: list[str]
    verdicts: list[Verdict]


def held_out_verdicts(
    rollout: Generator,
    policy,
    tokenizer,
    reward: Reward,
    rows: list[dict],
    max_new_tokens: int,
    chunk: int | None,
    *,
    samples: int = 0,
    temperature: float = 1.0,
    seed: tuple[int, int, int, int] | None = None,
) -> Scored:
    """samples = 0: one greedy completion per row, its completions and verdicts [n]. samples = k > 0: k
    completions per row at `temperature`, drawn from `eval_seed(*seed)` (seed = (run seed, step, rank, batch))
    without touching the caller's generators; completions and verdicts [n·k], row i's at i·k .. i·k + k − 1.
    `chunk`: at most this many completions are decoded at once (the KV cache holds one chunk), None for all."""
    repeats = max(samples, 1)
    step = max(1, (chunk or len(rows) * repeats) // repeats)  # prompts per chunk
    texts: list[str] = []
    with isolated_rng():
        if samples:
            assert seed is not None, "sampled held-out completions need their seed"
            torch.manual_seed(eval_seed(*seed))
        for start in range(0, len(rows), step):
            prompts = [r["prompt"] for r in rows[start : start + step]]
            request = GenerationRequest(prompts, max_new_tokens, temperature if samples else 1.0, not samples, repeats)
            texts += rollout(policy, tokenizer, request).texts
    return Scored(texts, score(reward, texts, [r for r in rows for _ in range(repeats)]))


def held_out_episodes(
    rollout: Rollout,
    rows: list[dict],
    max_new_tokens: int,
    chunk: int | None,
    *,
    samples: int = 0,
    temperature: float = 1.0,
    seed: tuple[int, int, int, int] | None = None,
) -> Scored:
    """`held_out_verdicts` for a multi-turn environment: whole episodes, greedy (samples = 0) or k sampled per
    row, through the training turn loop; a row's text is its episode's last turn, its verdict the episode's."""
    repeats = max(samples, 1)
    gbs = None if chunk is None else max(repeats, chunk // repeats * repeats)  # whole groups per generation call
    config = RolloutConfig(len(rows), repeats, max_new_tokens, temperature, gbs, greedy=not samples)
    with isolated_rng():
        if samples:
            assert seed is not None, "sampled held-out episodes need their seed"
            torch.manual_seed(eval_seed(*seed))
        batch = generate_and_score(rollout, rows, list(range(len(rows))), config)
    if len(batch.rewards) != len(rows) * repeats:  # an episode returned as several branches: score its first
        first = [i for i, gi in enumerate(batch.group_index.tolist()) if batch.group_index[:i].eq(gi).sum() < repeats]
        batch = batch.select(torch.tensor(first, dtype=torch.long, device=batch.group_index.device))
    verdicts = [
        Verdict(float(r), Status(s), details={"episode": t})
        for r, s, t in zip(batch.rewards.tolist(), batch.statuses, batch.transcripts or [{}] * len(rows), strict=True)
    ]
    return Scored(batch.completions, verdicts)


def passed(verdicts: list[Verdict]) -> list[bool]:
    return [v.status == Status.PASS for v in verdicts]


def held_out_records(step: int, rows: list[dict], greedy: Scored, sampled: Scored | None) -> list[dict]:
    """One heldout.jsonl record per row: its greedy completion, status and reward and, with sampled completions
    (k per row), how many of them passed. `step`: the RL steps done when it was evaluated (0: before RL; in
    metrics.csv the same evaluation's row has the step of the last step done). Which problems an update won or
    lost is a diff of two steps' records; the aggregate val/accuracy cannot say."""
    k = len(sampled.verdicts) // max(len(rows), 1) if sampled is not None else 0
    records = []
    for i, row in enumerate(rows):
        verdict = greedy.verdicts[i]
        record = {
            "step": step,
            "prompt": row["prompt"],
            **({"name": row["name"]} if "name" in row else {}),
            "completion": greedy.texts[i],
            "status": verdict.status.value,
            "reward": float(verdict.reward),
            **({"episode": verdict.details["episode"]} if "episode" in verdict.details else {}),
        }
        if sampled is not None:
            record["sampled_passed"] = sum(passed(sampled.verdicts[i * k : (i + 1) * k]))
            record["sampled"] = k
        records.append(record)
    return records


def append_records(path: Path, records: list[dict]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(r, default=str) + "\n" for r in records)
