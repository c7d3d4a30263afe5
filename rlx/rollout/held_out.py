"""The completions a held-out evaluation scores: greedy (val/accuracy) and, with `val_samples` = k > 0, k
samples per row at the training temperature (val/pass@1, rlx.distributed.evaluation).

Why sampled as well as greedy: greedy decoding turns a near tie at one token into a whole answer, so a change
of a hundredth of a nat can flip a problem either way, and one flipped problem of 64 moves val/accuracy by
0.016. DeepSeek-R1 (arXiv 2501.12948, section 3.1) reports pass@1 over k samples at a non-zero temperature for
this reason ("greedy decoding ... results in ... significant variability across different checkpoints"); the
sampled policy is also the one RL trains.
"""

from __future__ import annotations

import torch

from rlx.rewards.base import Reward, Status, Verdict
from rlx.rollout.collect import score
from rlx.rollout.engine import Generator
from rlx.seeding import eval_seed, isolated_rng


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
) -> list[Verdict]:
    """samples = 0: one greedy completion per row, its verdicts [n]. samples = k > 0: k completions per row at
    `temperature`, drawn from `eval_seed(*seed)` (seed = (run seed, step, rank, batch)) without touching the
    caller's generators; verdicts [n·k], row i's at i·k .. i·k + k − 1. `chunk`: at most this many completions
    are decoded at once (the KV cache holds one chunk), None for all."""
    repeats = max(samples, 1)
    step = max(1, (chunk or len(rows) * repeats) // repeats)  # prompts per chunk
    texts: list[str] = []
    with isolated_rng():
        if samples:
            assert seed is not None, "sampled held-out completions need their seed"
            torch.manual_seed(eval_seed(*seed))
        for start in range(0, len(rows), step):
            texts += rollout(
                policy,
                tokenizer,
                [r["prompt"] for r in rows[start : start + step]],
                max_new_tokens,
                temperature if samples else 1.0,
                greedy=not samples,
                repeats=repeats,
            ).texts
    return score(reward, texts, [r for r in rows for _ in range(repeats)])


def passed(verdicts: list[Verdict]) -> list[bool]:
    return [v.status == Status.PASS for v in verdicts]
