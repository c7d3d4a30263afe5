"""One step's experience: sample prompts → generate a group per prompt → score → keep the groups the
curriculum wants, over as many generation rounds as it allows."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import torch

from rlx.distributed import World, sharded_round
from rlx.rewards.base import Status, Verdict
from rlx.rollout.batch import RolloutBatch, concat
from rlx.rollout.generate import generate

log = logging.getLogger(__name__)


@dataclass
class RolloutStats:
    rounds: int
    groups_generated: int
    zero_std_groups: int
    tokens: int
    seconds: float
    status_counts: dict[str, int]
    batch_groups: int  # groups in the batch that is trained on (kept, after trimming)
    batch_zero_std_groups: int  # of those, groups whose rewards are all equal (no gradient)


def score(reward, completions: list[str], rows: list[dict]) -> list[Verdict]:
    """Run the reward; a scorer that raises or returns a non-finite number marks samples INFRA (excluded
    from statistics and counted), never a silent 0 and never a crash of the trainer."""
    try:
        verdicts = reward(completions, rows)
        if len(verdicts) != len(completions):
            raise RuntimeError(f"reward returned {len(verdicts)} verdicts for {len(completions)} completions")
    except Exception as err:  # the scorer itself broke: nothing here is the completion's fault
        log.exception("reward %s failed on a batch; its %d samples are marked INFRA", type(reward).__name__,
                      len(completions))
        return [Verdict(0.0, Status.INFRA, details={"error": repr(err)}) for _ in completions]
    out = []
    for v in verdicts:
        if v.reward is None or not math.isfinite(float(v.reward)):
            log.warning("reward returned %r; marking the sample INFRA", v.reward)
            v = Verdict(0.0, Status.INFRA, v.components, {**v.details, "error": f"non-finite reward {v.reward!r}"})
        out.append(v)
    return out


def generate_and_score(policy, tokenizer, reward, rows, indices, group_size, max_new_tokens, temperature,
                       group_offset: int = 0) -> RolloutBatch:
    prompt_rows = [rows[i] for i in indices for _ in range(group_size)]
    input_ids, attention_mask, response_mask, truncated, texts = generate(
        policy, tokenizer, [r["prompt"] for r in prompt_rows], max_new_tokens, temperature, greedy=False)
    verdicts = score(reward, texts, prompt_rows)
    names = sorted({k for v in verdicts for k in v.components})
    device = input_ids.device
    return RolloutBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        response_mask=response_mask,
        group_index=torch.arange(len(indices), device=device).repeat_interleave(group_size) + group_offset,
        prompt_index=torch.tensor(indices, device=device).repeat_interleave(group_size),
        rewards=torch.tensor([float(v.reward) for v in verdicts], device=device),
        valid=torch.tensor([v.status != Status.INFRA for v in verdicts], device=device),
        truncated=truncated,
        completions=texts,
        statuses=[v.status.value for v in verdicts],
        components={n: torch.tensor([float(v.components.get(n, 0.0)) for v in verdicts], device=device)
                    for n in names},
    )


def grouped_rewards(batch: RolloutBatch, group_size: int) -> list[list[float]]:
    rewards = batch.rewards.view(-1, group_size).tolist()
    valid = batch.valid.view(-1, group_size).tolist()
    return [[r for r, ok in zip(rs, oks) if ok] for rs, oks in zip(rewards, valid)]


def collect(policy, tokenizer, reward, sampler, rows, prompts_per_step: int, group_size: int,
            max_new_tokens: int, temperature: float, pad_id: int) -> tuple[RolloutBatch, RolloutStats]:
    start = time.perf_counter()
    kept: list[RolloutBatch] = []
    n_kept = rounds = generated = zero_std = tokens = 0
    statuses: dict[str, int] = {}
    last = None
    while n_kept < prompts_per_step and rounds < sampler.max_rounds:
        indices = sampler.sample(prompts_per_step - n_kept)
        # each rank generates and scores its share of the round; every rank gets the whole round back
        batch = sharded_round(World.current(), lambda share: generate_and_score(
            policy, tokenizer, reward, rows, share, group_size, max_new_tokens, temperature), indices, pad_id)
        groups = grouped_rewards(batch, group_size)
        sampler.observe(indices, groups)
        keep = sampler.keep(groups)
        rounds += 1
        generated += len(groups)
        zero_std += sum(1 for g in groups if len(g) > 0 and max(g) == min(g))
        tokens += int(batch.response_mask.sum())
        for s in batch.statuses:
            statuses[s] = statuses.get(s, 0) + 1
        last = batch
        # Group i's completions are rows i*G .. i*G+G-1 of the round's batch.
        rows_kept = torch.tensor([i * group_size + j for i, k in enumerate(keep) if k for j in range(group_size)],
                                 dtype=torch.long)
        if len(rows_kept):
            sub = batch.select(rows_kept.to(batch.input_ids.device))
            sub.group_index = torch.unique(sub.group_index, return_inverse=True)[1]
            kept.append(sub)
            n_kept += int(sum(keep))
    # If no round produced a group the curriculum wanted, train on the last round as it is: its
    # zero-variance groups get zero advantage, and the metrics say so.
    result = concat(kept, pad_id) if kept else last
    if n_kept > prompts_per_step:  # a sampler that oversamples may overfill the last round
        result = result.select(torch.nonzero(result.group_index < prompts_per_step).squeeze(-1))
    in_batch = grouped_rewards(result, group_size)
    stats = RolloutStats(rounds, generated, zero_std, tokens, time.perf_counter() - start, statuses,
                         len(in_batch), sum(1 for g in in_batch if len(g) > 0 and max(g) == min(g)))
    return result, stats
