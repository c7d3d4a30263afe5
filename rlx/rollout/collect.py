"""One step's experience: sample prompts → generate a group per prompt → score → keep the groups the
curriculum wants, over as many generation rounds as it allows.

Within a round, generation runs in chunks of `generation_batch_size` sequences (whole groups), so the KV cache
holds one chunk at a time. With `rollout.overlap_scoring`, scoring runs on a worker thread while generation
goes on: the completions the engine reports finished (eos) as it decodes the rest, then the chunk's truncated
ones while the next chunk generates. The rewards do their heavy work in other processes (sandbox servers, the
math_verify worker) or in torch-free Python that is short, so the generating thread keeps the cores. One
worker thread keeps the reward's calls sequential, as they always were; each verdict goes to its row, so the
batch is the one a single call per chunk gives (for a reward that scores each completion on its own).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from rlx.distributed import World, sharded_round
from rlx.rewards.base import Reward, Status, Verdict
from rlx.rollout.batch import RolloutBatch, concat
from rlx.rollout.engine import Generation, GenerationRequest, Generator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rollout:
    """Who makes a step's experience: `engine` samples from `policy` (its `tokenizer` encodes and decodes),
    `reward` scores."""

    policy: Any
    tokenizer: Any
    engine: Generator
    reward: Reward


@dataclass(frozen=True)
class RolloutConfig:
    """What a step's rollout reads from the run's config."""

    prompts_per_step: int  # algo.prompts_per_step: groups in the batch that is trained on
    group_size: int  # algo.group_size: completions per prompt (G)
    max_new_tokens: int  # data.max_new_tokens
    temperature: float  # algo.temperature
    generation_batch_size: int | None  # algo.generation_batch_size: sequences per generation call (null: all)

    def __post_init__(self) -> None:
        gbs = self.generation_batch_size
        if gbs is not None and (gbs < self.group_size or gbs % self.group_size):
            raise ValueError(
                f"algo.generation_batch_size={gbs} must be a multiple of algo.group_size={self.group_size} "
                "(a prompt's completions are generated together, from one prefill). Set it to a multiple of "
                "the group size, or null to generate a whole round at once"
            )

    def request(self, prompts: list[str]) -> GenerationRequest:
        """A generation call of these prompts: a group of completions each, sampled at the step's temperature."""
        return GenerationRequest(prompts, self.max_new_tokens, self.temperature, greedy=False, repeats=self.group_size)

    def chunks(self, indices: list[int]) -> list[list[int]]:
        """The round's prompts, split so that each generation call holds ≤ generation_batch_size sequences."""
        per = len(indices) if self.generation_batch_size is None else self.generation_batch_size // self.group_size
        return [indices[i : i + per] for i in range(0, len(indices), max(per, 1))]


@dataclass
class RolloutStats:
    rounds: int
    groups_generated: int
    zero_std_groups: int
    tokens: int
    seconds: float  # wall time of the whole collect
    status_counts: dict[str, int]
    batch_groups: int  # groups in the batch that is trained on (kept, after trimming)
    batch_zero_std_groups: int  # of those, groups whose rewards are all equal (no gradient)
    generate_seconds: float = 0.0  # time/generate: wall time inside the rollout engine
    score_seconds: float = 0.0  # time/score: time inside the reward (overlaps generation; see collect)
    chunks: int = 0  # generation calls
    engine: dict[str, float] = field(default_factory=dict)  # Generation.metrics summed over the calls


@dataclass
class Timer:
    generate: float = 0.0
    score: float = 0.0
    chunks: int = 0
    engine: dict[str, float] = field(default_factory=dict)


def score(reward: Reward, completions: list[str], rows: list[dict]) -> list[Verdict]:
    """Run the reward; a scorer that raises or returns a non-finite number marks samples INFRA (excluded
    from statistics and counted), never a silent 0 and never a crash of the trainer."""
    try:
        verdicts = reward(completions, rows)
        if len(verdicts) != len(completions):
            raise RuntimeError(f"reward returned {len(verdicts)} verdicts for {len(completions)} completions")
    except Exception as err:  # the scorer itself broke: nothing here is the completion's fault
        log.exception(
            "reward %s failed on a batch; its %d samples are marked INFRA", type(reward).__name__, len(completions)
        )
        return [Verdict(0.0, Status.INFRA, details={"error": repr(err)}) for _ in completions]
    out = []
    for v in verdicts:
        if v.reward is None or not math.isfinite(float(v.reward)):
            log.warning("reward returned %r; marking the sample INFRA", v.reward)
            v = Verdict(0.0, Status.INFRA, v.components, {**v.details, "error": f"non-finite reward {v.reward!r}"})
        out.append(v)
    return out


def to_batch(
    gen: Generation, verdicts: list[Verdict], indices: list[int], group_size: int, names: list[str]
) -> RolloutBatch:
    """`names`: the reward components every batch of this step carries (0 where a verdict lacks one)."""
    device = gen.input_ids.device
    return RolloutBatch(
        input_ids=gen.input_ids,
        attention_mask=gen.attention_mask,
        response_mask=gen.response_mask,
        group_index=torch.arange(len(indices), device=device).repeat_interleave(group_size),
        prompt_index=torch.tensor(indices, device=device).repeat_interleave(group_size),
        rewards=torch.tensor([float(v.reward) for v in verdicts], device=device),
        valid=torch.tensor([v.status != Status.INFRA for v in verdicts], device=device),
        truncated=gen.truncated,
        completions=gen.texts,
        statuses=[v.status.value for v in verdicts],
        components={n: torch.tensor([float(v.components.get(n, 0.0)) for v in verdicts], device=device) for n in names},
        # (perf) the engine's log-probs, where the update may take them for its forward (Generation.reusable)
        sampling_logp=gen.logprobs if gen.reusable else None,
        sampling_entropy=gen.entropy if gen.reusable else None,
        sampling_temperature=gen.temperature if gen.reusable else None,
        sampler_logp=gen.logprobs,  # μ, for the mismatch metrics and the rollout correction
    )


def generate_and_score(
    rollout: Rollout, rows: list[dict], indices: list[int], config: RolloutConfig, timer: Timer | None = None
) -> RolloutBatch:
    """One round: the prompts `indices`, G completions each, generated chunk by chunk; with
    `engine.overlap_scoring` each chunk's completions are scored on a worker thread as the engine reports them
    finished, and the rest once the chunk is generated, while the next chunk generates. Groups come back in the
    order of `indices` (group i = rows i·G ..)."""
    timer = timer if timer is not None else Timer()
    g = config.group_size
    stream = rollout.engine.overlap_scoring
    scored: list[tuple[Generation, list[int], Scoring]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlx-score") if stream else Inline() as pool:
        for chunk in config.chunks(list(indices)):
            scoring = Scoring(rollout.reward, [rows[i] for i in chunk for _ in range(g)], pool)
            start = time.perf_counter()
            gen = rollout.engine(
                rollout.policy,
                rollout.tokenizer,
                config.request([rows[i]["prompt"] for i in chunk]),
                on_finished=scoring.add if stream else None,
            )
            timer.generate += time.perf_counter() - start
            timer.chunks += 1
            for key, value in gen.metrics.items():
                timer.engine[key] = timer.engine.get(key, 0.0) + value
            scoring.finish(gen.texts)
            scored.append((gen, chunk, scoring))
        verdicts = [scoring.verdicts(timer) for _, _, scoring in scored]
    names = sorted({k for vs in verdicts for v in vs for k in v.components})
    batches = [to_batch(gen, vs, chunk, g, names) for (gen, chunk, _), vs in zip(scored, verdicts, strict=True)]
    return concat(batches, rollout.tokenizer.pad_token_id)


class Scoring:
    """One generation's verdicts, scored on `pool` (one worker thread, or `Inline`) as its completions are
    reported final: each reward call takes every completion reported and not yet scored, in row order (so a
    reward with several sandbox workers gets as many as are ready), and each verdict goes to its own row. A
    reward that scores each completion on its own gives the verdicts of one call over the whole generation."""

    def __init__(self, reward: Reward, rows: list[dict], pool) -> None:
        self.reward, self.rows, self.pool = reward, rows, pool
        self.lock = threading.Lock()
        self.pending: list[tuple[int, str]] = []  # (row, text) reported, not yet taken by a reward call
        self.reported: dict[int, str] = {}
        self.results: list[Verdict | None] = [None] * len(rows)
        self.futures: list[Future] = []
        self.seconds = 0.0  # time inside the reward (its calls run one at a time, on the pool's thread)

    def add(self, rows: list[int], texts: list[str]) -> None:
        """`on_finished`: these rows' completions are final (rlx.rollout.engine.Generator)."""
        for row, text in zip(rows, texts, strict=True):
            if row in self.reported:
                raise RuntimeError(f"the rollout engine reported row {row} finished twice")
            self.reported[row] = text
        with self.lock:
            self.pending += zip(rows, texts, strict=True)
        self.futures.append(self.pool.submit(self._score_pending))

    def finish(self, texts: list[str]) -> None:
        """The generation returned `texts`: score the rows it did not report (truncated, or never streamed)."""
        changed = [row for row, text in self.reported.items() if texts[row] != text]
        if changed:
            raise RuntimeError(f"the rollout engine reported texts for rows {changed} that its Generation changed")
        rest = [row for row in range(len(texts)) if row not in self.reported]
        if rest:
            self.add(rest, [texts[row] for row in rest])

    def _score_pending(self) -> None:
        with self.lock:
            taken, self.pending = sorted(self.pending), []
        if not taken:  # an earlier call took them
            return
        rows = [row for row, _ in taken]
        verdicts, seconds = timed_score(self.reward, [text for _, text in taken], [self.rows[r] for r in rows])
        for row, verdict in zip(rows, verdicts, strict=True):
            self.results[row] = verdict
        self.seconds += seconds

    def verdicts(self, timer: Timer) -> list[Verdict]:
        """Wait for the calls, add their time to `timer.score`; one verdict per row, in row order."""
        for future in self.futures:
            future.result()
        timer.score += self.seconds
        out = [v for v in self.results if v is not None]
        assert len(out) == len(self.results), "every row was scored (finish reports the rest)"
        return out


def align_components(batches: list[RolloutBatch]) -> list[RolloutBatch]:
    """Give every batch the same reward components (0 where a round's verdicts had none, e.g. an INFRA round)."""
    names = {k for b in batches for k in b.components}
    for b in batches:
        n = b.rewards.shape[0]
        b.components = {k: b.components.get(k, torch.zeros(n, device=b.rewards.device)) for k in sorted(names)}
    return batches


class Inline:
    """ThreadPoolExecutor's interface, running each call at once on the calling thread."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future


def timed_score(reward, completions: list[str], rows: list[dict]) -> tuple[list[Verdict], float]:
    start = time.perf_counter()
    verdicts = score(reward, completions, rows)
    return verdicts, time.perf_counter() - start


def grouped_rewards(batch: RolloutBatch, group_size: int) -> list[list[float]]:
    rewards = batch.rewards.view(-1, group_size).tolist()
    valid = batch.valid.view(-1, group_size).tolist()
    return [[r for r, ok in zip(rs, oks, strict=True) if ok] for rs, oks in zip(rewards, valid, strict=True)]


def collect(rollout: Rollout, sampler, rows: list[dict], config: RolloutConfig) -> tuple[RolloutBatch, RolloutStats]:
    """The step's batch: rounds of `generate_and_score` over the prompts `sampler` draws from `rows` until it
    has kept config.prompts_per_step groups or allows no more rounds."""
    start = time.perf_counter()
    pad = rollout.tokenizer.pad_token_id
    timer = Timer()
    kept: list[RolloutBatch] = []
    n_kept = rounds = generated = zero_std = tokens = 0
    statuses: dict[str, int] = {}
    last: RolloutBatch | None = None
    g = config.group_size
    while n_kept < config.prompts_per_step and rounds < sampler.max_rounds:
        indices = sampler.sample(config.prompts_per_step - n_kept)
        # each rank generates and scores its share of the round; every rank gets the whole round back
        batch = sharded_round(
            World.current(),
            lambda share: generate_and_score(rollout, rows, share, config, timer),
            indices,
            pad,
        )
        groups = grouped_rewards(batch, g)
        sampler.observe(indices, groups)
        keep = sampler.keep(groups)
        rounds += 1
        generated += len(groups)
        zero_std += zero_variance(groups)
        tokens += int(batch.response_mask.sum())
        for s in batch.statuses:
            statuses[s] = statuses.get(s, 0) + 1
        last = batch
        if any(keep):
            kept.append(kept_groups(batch, keep, g))
            n_kept += int(sum(keep))
    # If no round produced a group the curriculum wanted, train on the last round as it is: its
    # zero-variance groups get zero advantage, and the metrics say so.
    result = concat(align_components(kept), pad) if kept else last
    assert result is not None, "the loop ran at least one round (sampler.max_rounds >= 1)"
    if n_kept > config.prompts_per_step:  # a sampler that oversamples may overfill the last round
        result = result.select(torch.nonzero(result.group_index < config.prompts_per_step).squeeze(-1))
    in_batch = grouped_rewards(result, g)
    stats = RolloutStats(
        rounds,
        generated,
        zero_std,
        tokens,
        time.perf_counter() - start,
        statuses,
        len(in_batch),
        zero_variance(in_batch),
        generate_seconds=timer.generate,
        score_seconds=timer.score,
        chunks=timer.chunks,
        engine=timer.engine,
    )
    return result, stats


def zero_variance(groups: list[list[float]]) -> int:
    """How many groups have all their (valid) rewards equal: no gradient from them."""
    return sum(1 for grp in groups if len(grp) > 0 and max(grp) == min(grp))


def kept_groups(batch: RolloutBatch, keep: list[bool], g: int) -> RolloutBatch:
    """The round's groups the curriculum keeps (group i's completions are rows i·G .. i·G + G − 1), their group
    ids renumbered 0 .. kept − 1."""
    rows_kept = torch.tensor([i * g + j for i, k in enumerate(keep) if k for j in range(g)], dtype=torch.long)
    sub = batch.select(rows_kept.to(batch.input_ids.device))
    sub.group_index = torch.unique(sub.group_index, return_inverse=True)[1]
    return sub
