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
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from rlx.distributed import World, sharded_round
from rlx.envs.episodes import (
    Episode,
    Sampled,
    TurnLimits,
    after_turn,
    cut_at_stop,
    run_turns,
    safe_reset,
)
from rlx.envs.protocol import Environment, EpisodeDriver, Turn
from rlx.envs.single import RewardEnv
from rlx.rewards.base import Reward, Status, Verdict
from rlx.rollout.batch import RolloutBatch, concat, episode_logprobs, from_trajectories
from rlx.rollout.generation import Generation, GenerationRequest, Generator
from rlx.rollout.scoring import Inline, Scoring, Stepper

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rollout:
    """Who makes a step's experience: `engine` samples from `policy` (its `tokenizer` encodes and decodes), the
    episodes of `env` (conf/env; None: the one-turn episode of `reward`, env=single) score it.
    `max_context_tokens`: an episode whose next turn would not fit ends (EpisodeEnd.CONTEXT); None: no cap
    (rlx.train passes env.max_context_tokens, or the model's context)."""

    policy: Any
    tokenizer: Any
    engine: Generator
    reward: Reward
    env: Environment | EpisodeDriver | None = None
    max_context_tokens: int | None = None

    @property
    def environment(self) -> Environment:
        if self.env is None:
            return RewardEnv(self.reward)
        if not isinstance(self.env, Environment):  # rlx.envs.build checked it: an EpisodeDriver runs its own turns
            raise TypeError(f"{type(self.env).__name__} runs its own turns (EpisodeDriver): it has no reset/step")
        return self.env

    def stop(self) -> tuple[str, ...]:
        """The environment's stop strings: an optional attribute of an environment (none: eos ends a turn)."""
        return tuple(getattr(self.environment, "stop", ()))


@dataclass(frozen=True)
class RolloutConfig:
    """What a step's rollout reads from the run's config."""

    prompts_per_step: int  # algo.prompts_per_step: groups in the batch that is trained on
    group_size: int  # algo.group_size: completions per prompt (G)
    max_new_tokens: int  # data.max_new_tokens
    temperature: float  # algo.temperature
    generation_batch_size: int | None  # algo.generation_batch_size: sequences per generation call (null: all)
    greedy: bool = False  # argmax decoding (held-out episodes); else sampling at `temperature`

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
        return GenerationRequest(
            prompts, self.max_new_tokens, self.temperature, greedy=self.greedy, repeats=self.group_size
        )

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

    def record(self, gen: Generation, seconds: float) -> None:
        """One generation call: its wall time and the engine's own metrics."""
        self.generate += seconds
        self.chunks += 1
        for key, value in gen.metrics.items():
            self.engine[key] = self.engine.get(key, 0.0) + value


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
    """One round of episodes: the prompts `indices`, G episodes each. Every episode's first turn is generated
    chunk by chunk (one prefill per prompt); with `engine.overlap_scoring` (and no stop strings) each chunk's
    first turns are stepped on a worker thread as the engine reports them finished, and the rest once the chunk
    is generated, while the next chunk generates. A one-turn environment (env=single) ends there and its batch
    is the generations' own layout. Episodes that go on take their later turns together (rlx.envs.episodes).
    Groups come back in the order of `indices` (group i = rows i·G ..)."""
    timer = timer if timer is not None else Timer()
    if isinstance(rollout.env, EpisodeDriver):  # env=verifiers: the library runs the turns, the engine samples
        return driven_round(rollout, rollout.env, rows, indices, config, timer)
    g, env, stop = config.group_size, rollout.environment, rollout.stop()
    one_turn = env.max_turns == 1 and not stop
    stream = rollout.engine.overlap_scoring and not stop  # with stop strings a text is final once cut
    scored: list[tuple[Generation, list[int], Scoring, Any, list[Sampled]]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlx-score") if stream else Inline() as pool:
        for chunk in config.chunks(list(indices)):
            states = safe_reset(env, [rows[i] for i in chunk for _ in range(g)])
            scoring = Scoring(Stepper(env, states), len(chunk) * g, pool)
            start = time.perf_counter()
            gen = rollout.engine(
                rollout.policy,
                rollout.tokenizer,
                replace(config.request([rows[i]["prompt"] for i in chunk]), keep_cache=not one_turn),
                on_finished=scoring.add if stream else None,
            )
            timer.record(gen, time.perf_counter() - start)
            firsts = [] if one_turn else [cut_at_stop(rollout.tokenizer, t, stop) for t in sampled_rows(gen)]
            scoring.finish(gen.texts if one_turn else [t[2] for t in firsts])
            scored.append((gen, chunk, scoring, states, firsts))
        answers = [scoring.turns() for _, _, scoring, _, _ in scored]
        timer.score += sum(scoring.seconds for _, _, scoring, _, _ in scored)
    if one_turn:
        verdicts = [[t.verdict for t in turns] for turns in answers]
        names = sorted({k for vs in verdicts for v in vs for k in v.components})
        batches = [to_batch(gen, vs, chunk, g, names) for (gen, chunk, *_), vs in zip(scored, verdicts, strict=True)]
        return concat(batches, rollout.tokenizer.pad_token_id)
    return later_turns(rollout, config, scored, answers, timer)


def later_turns(rollout: Rollout, config: RolloutConfig, scored, answers: list[list[Turn]], timer: Timer):
    """The round's episodes from their answered first turns to their ends, as one batch."""
    env, tokenizer, g = rollout.environment, rollout.tokenizer, config.group_size
    context = rollout.max_context_tokens if rollout.max_context_tokens is not None else 2**62
    limits = TurnLimits(env.max_turns, config.max_new_tokens, context, rollout.stop())
    episodes, indices, reported = [], [], True
    for (gen, chunk, _, states, firsts), turns in zip(scored, answers, strict=True):
        reported = reported and gen.logprobs is not None
        for row, (first, turn) in enumerate(zip(firsts, turns, strict=True)):
            prompt = gen.input_ids[row, : -gen.response_width][gen.attention_mask[row, : -gen.response_width].bool()]
            episode = Episode(prompt.tolist(), None if isinstance(states, Exception) else states[row])
            episode.add_turn(first, tokenizer.eos_token_id)
            after_turn(episode, turn, tokenizer, limits)
            episodes.append(episode)
        indices += chunk
    sampler = EngineTurns(rollout, config, timer)
    run_turns(episodes, env, sampler, tokenizer, limits)
    sampler.release()
    trajectories = [e.trajectory() for e in episodes]
    device = scored[0][0].input_ids.device
    width = max(1, max(len(t.ids) for t in trajectories))
    return from_trajectories(
        trajectories,
        torch.arange(len(indices), device=device).repeat_interleave(g),
        torch.tensor(indices, device=device).repeat_interleave(g),
        tokenizer.pad_token_id,
        env.max_turns,
        # μ for the mismatch metrics and the rollout correction; the update runs its own forward for π_old
        sampler_logp=episode_logprobs(trajectories, width).to(device) if reported and sampler.reported else None,
    )


def driven_round(
    rollout: Rollout, env: EpisodeDriver, rows: list[dict], indices: list[int], config: RolloutConfig, timer: Timer
) -> RolloutBatch:
    """One round of an environment that drives the model itself: G episodes of each prompt in `indices`, every
    model turn sampled by the engine (EngineTurns). A row's episode may come back as several trajectories (its
    trace's branches): each is a sample of the row's group, so a group may hold more than G samples."""
    g, tokenizer = config.group_size, rollout.tokenizer
    sampler = EngineTurns(rollout, config, timer)
    start, generating = time.perf_counter(), timer.generate
    try:
        per_row = env.episodes([rows[i] for i in indices for _ in range(g)], sampler, tokenizer, config.max_new_tokens)
    finally:
        sampler.release()  # the episodes' kept keys and values (rollout.keep_turn_cache)
    timer.score += max(0.0, time.perf_counter() - start - (timer.generate - generating))  # the library's own time
    trajectories = [t for branches in per_row for t in branches]
    groups = [k // g for k, branches in enumerate(per_row) for _ in branches]  # [N] the row's prompt in the round
    device = next(rollout.policy.parameters()).device
    width = max(1, max(len(t.ids) for t in trajectories))
    return from_trajectories(
        trajectories,
        torch.tensor(groups, dtype=torch.long, device=device),
        torch.tensor([indices[k] for k in groups], dtype=torch.long, device=device),
        tokenizer.pad_token_id,
        env.max_turns,
        sampler_logp=episode_logprobs(trajectories, width).to(device) if sampler.reported else None,
    )


def sampled_rows(gen: Generation) -> list[Sampled]:
    """Each row's sampled ids (up to and including eos), their log-probs (0 where the engine reports none), text
    and whether it was truncated."""
    response = gen.input_ids[:, -gen.response_width :] if gen.response_width else gen.input_ids[:, :0]
    out = []
    for r, text in enumerate(gen.texts):
        keep = gen.response_mask[r].bool()
        logps = gen.logprobs[r][keep].tolist() if gen.logprobs is not None else [0.0] * int(keep.sum())
        out.append((response[r][keep].tolist(), logps, text, bool(gen.truncated[r])))
    return out


class EngineTurns:
    """The rollout engine as a `TurnSampler`: one continuation of each token-id context, in calls of at most
    algo.generation_batch_size contexts (the KV cache holds one call at a time)."""

    def __init__(self, rollout: Rollout, config: RolloutConfig, timer: Timer) -> None:
        self.rollout, self.config, self.timer = rollout, config, timer
        self.reported = True  # every call reported its log-probs (μ)

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[Sampled]:
        per = self.config.generation_batch_size or len(contexts)
        out: list[Sampled] = []
        for at in range(0, len(contexts), per):
            c = self.config
            request = GenerationRequest(
                [], max_new_tokens, c.temperature, c.greedy, prompt_ids=contexts[at : at + per], keep_cache=True
            )
            start = time.perf_counter()
            gen = self.rollout.engine(self.rollout.policy, self.rollout.tokenizer, request)
            self.timer.record(gen, time.perf_counter() - start)
            self.reported = self.reported and gen.logprobs is not None
            out += sampled_rows(gen)
        return out

    def release(self) -> None:
        """The episodes it sampled for have ended: the engine may free what it kept for their next turns
        (rollout=engine's kept keys and values, rlx.rollout.turn_cache)."""
        release = getattr(self.rollout.engine, "release_turns", None)  # only rollout=engine keeps any
        if release is not None:
            release()


def align_components(batches: list[RolloutBatch]) -> list[RolloutBatch]:
    """Give every batch the same reward components (0 where a round's verdicts had none, e.g. an INFRA round)."""
    names = {k for b in batches for k in b.components}
    for b in batches:
        n = b.rewards.shape[0]
        b.components = {k: b.components.get(k, torch.zeros(n, device=b.rewards.device)) for k in sorted(names)}
    return batches


def grouped_rewards(batch: RolloutBatch, group_size: int) -> list[list[float]]:
    """Each group's valid rewards, by group_index (a group holds G samples, or more where an environment that
    drives the model returned several branches of one episode)."""
    groups: list[list[float]] = [[] for _ in range(int(batch.group_index.max()) + 1 if len(batch.group_index) else 0)]
    for gi, r, ok in zip(batch.group_index.tolist(), batch.rewards.tolist(), batch.valid.tolist(), strict=True):
        if ok:
            groups[gi].append(r)
    return groups


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
    """The round's groups the curriculum keeps (every sample whose group_index is kept, in batch order), their
    group ids renumbered 0 .. kept − 1."""
    wanted = torch.tensor(keep, dtype=torch.bool, device=batch.group_index.device)  # [groups]
    sub = batch.select(torch.nonzero(wanted[batch.group_index]).squeeze(-1))  # every sample of a kept group
    sub.group_index = torch.unique(sub.group_index, return_inverse=True)[1]
    return sub
