"""samples.jsonl: a few of a step's completions, each with its prompt, score and the row fields the reward
checked it against, for reading what the policy writes as it trains. A multi-turn episode's record also holds
`episode`: each turn's text, reward and status, the observations between them and why it ended."""

from __future__ import annotations

import json
from pathlib import Path

from rlx.rollout.batch import RolloutBatch


def spread_over_prompts(prompt_index: list[int], count: int) -> list[int]:
    """`count` rows spread over the batch's prompts: the first completion of each prompt, then the second, ..."""
    rank: list[int] = []  # rank[i]: how many earlier completions share completion i's prompt
    seen: dict[int, int] = {}
    for p in prompt_index:
        rank.append(seen.get(p, 0))
        seen[p] = rank[-1] + 1
    return sorted(range(len(prompt_index)), key=lambda i: (rank[i], i))[:count]


def reference_fields(reward) -> tuple[str, ...]:
    """The row fields written beside a completion: a reward whose row fields hold expected values the policy
    must never see (unit tests) lists the safe ones (`sample_fields`), else those it reads (`required_fields`)."""
    return tuple(reward.sample_fields)


def append_samples(
    path: Path, batch: RolloutBatch, step: int, ranks: list[int], rows: list[dict], fields: tuple[str, ...], count: int
) -> None:
    """Append `count` of the batch's completions (spread over its prompts) to `path`, one JSON line each;
    `rows`: the training rows the batch's prompt_index points into; `ranks[i]`: the rank that trained row i."""
    prompts = [int(p) for p in batch.prompt_index]
    with path.open("a", encoding="utf-8") as out:
        for i in spread_over_prompts(prompts, count):
            row = rows[prompts[i]]
            record = {
                "step": step,
                "prompt": row["prompt"],
                "completion": batch.completions[i],
                "reference": {f: row[f] for f in fields if f in row},
                "reward": float(batch.rewards[i]),
                "status": batch.statuses[i],
                "rank": ranks[i],
            }
            if batch.transcripts is not None:  # a multi-turn episode: each turn's text, reward and status
                record["episode"] = batch.transcripts[i]
            out.write(json.dumps(record, default=str) + "\n")
