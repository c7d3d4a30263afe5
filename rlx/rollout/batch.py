"""The one batch type that flows rollout → reward → advantage → loss.

Completions are right-aligned after left-padded prompts, so every completion token t sits at column
`prompt_width + t` of `input_ids`: log-probs for all of them come from one forward pass without gathers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch
from torch import Tensor

from rlx.envs.trajectory import Trajectory
from rlx.rewards.base import Status


@dataclass
class RolloutBatch:
    input_ids: Tensor  # [N, P + T] left-padded prompt, then the completion (padded after its eos)
    attention_mask: Tensor  # [N, P + T]
    response_mask: Tensor  # [N, T] 1 on completion tokens up to and including eos
    group_index: Tensor  # [N] which prompt of this step the completion answers (0..K-1)
    prompt_index: Tensor  # [N] the prompt's index in the training set
    rewards: Tensor  # [N] scalar reward of each completion
    valid: Tensor  # [N] bool, False where the scorer itself failed (INFRA): excluded everywhere
    truncated: Tensor  # [N] bool, True where the completion hit max_new_tokens without eos
    completions: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    components: dict[str, Tensor] = field(default_factory=dict)  # name -> [N]
    # Filled by rlx.update.prepare (as a new batch, dataclasses.replace: no field changes meaning in place):
    sample_mask: Tensor | None = None  # [N] bool, trained samples: valid and not removed by reward shaping
    scores: Tensor | None = None  # [N] shaped rewards (clipped, length-penalised) of the trained samples, else 0
    old_logp: Tensor | None = None  # [N, T] π_old: the trainer's forward of the sampling weights, or the engine's
    #                                 log-probs where it vouches for them (sampling_logp); None when it equals
    #                                 the first update's. PPO's ratio is π_θ / π_old (rlx.algos.correction)
    ref_logp: Tensor | None = None  # [N, T] under the frozen reference (None when no reference is used)
    entropy: Tensor | None = None  # [N, T] the sampling policy's per-token entropy (only when token_select reads it)
    values: Tensor | None = None  # [N, T] critic estimates (None without a critic)
    token_rewards: Tensor | None = None  # [N, T] score at the last token, minus a per-token KL penalty if any
    advantages: Tensor | None = None  # [N, T]
    returns: Tensor | None = None  # [N, T] value targets (critic only)
    # (perf) The rollout engine's own log-probs of the sampled tokens and the entropies of the distributions
    # they were drawn from, from its decode logits at `sampling_temperature`, 0 off the response mask. Set only
    # where they equal the trainer's forward of the sampling policy to float rounding (Generation.reusable;
    # tests/rollout/test_engine.py pins 1e-5), so rlx.update.prepare uses them as old_logp and policy/entropy
    # without that forward; None from rollout=hf, under reduced precision or with rollout.reuse_logprobs=false.
    sampling_logp: Tensor | None = None  # [N, T]
    sampling_entropy: Tensor | None = None  # [N, T]
    sampling_temperature: float | None = None
    # The rollout engine's log-probs of its sampled tokens, whatever their precision (μ, the behaviour policy:
    # vLLM's, the engine's, HF generate's scores), at algo.temperature, 0 off the response mask; None where the
    # engine reports none. Compared with old_logp every step (rlx.rollout.mismatch) and read by the rollout
    # correction (π_old / μ; rlx.algos.correction). Never used as old_logp unless also in sampling_logp.
    sampler_logp: Tensor | None = None  # [N, T]
    # The policy version that sampled each row (rollout.max_staleness > 0: rlx.rollout.staleness); None: the
    # synchronous loop, where every row comes from the weights being updated.
    policy_version: Tensor | None = None  # [N] int
    # Multi-turn episodes (rlx.envs.episodes; None from a one-turn environment): the completion region then
    # holds every id after the prompt, the model's turns and the observations between them (attention 1,
    # response_mask 0: context only, in no log-prob, loss, KL, entropy or count).
    token_turn: Tensor | None = None  # [N, T] long: the model turn (0-based) of each sampled id, -1 elsewhere
    turn_rewards: Tensor | None = None  # [N, K] float: each turn's reward (K = env.max_turns; 0 past `turns`)
    turn_passed: Tensor | None = None  # [N, K] bool: the turn's verdict was PASS
    turns: Tensor | None = None  # [N] long: model turns the episode took
    ends: list[str] | None = None  # why each episode ended (EpisodeEnd values)
    transcripts: list[dict] | None = None  # per episode: each turn's text, reward and status, the observations

    @property
    def response_width(self) -> int:
        return self.response_mask.shape[1]

    def loss_mask(self) -> Tensor:
        """[N, T] float: completion tokens of the trained samples (what the loss and the advantages see)."""
        assert self.sample_mask is not None, "rlx.update.prepare sets sample_mask"
        return self.response_mask.float() * self.sample_mask[:, None]  # [N, T]

    def returns_per_sequence(self) -> Tensor:
        """Σ_t token reward: the sequence reward, less any KL penalty placed in the reward."""
        assert self.token_rewards is not None, "rlx.update.prepare sets token_rewards"
        return self.token_rewards.sum(-1)  # [N]

    def select(self, rows: Tensor) -> RolloutBatch:
        """The sub-batch of `rows` (an index tensor) with every per-sample field sliced alike."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Tensor):
                out[f.name] = value[rows]
            elif isinstance(value, list):
                out[f.name] = [value[i] for i in rows.tolist()]
            elif isinstance(value, dict):
                out[f.name] = {k: v[rows] for k, v in value.items()}
            else:
                out[f.name] = value
        return replace(self, **out)


def concat(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
    """Join batches from several generation rounds, re-padding to a common prompt and completion width."""
    if len(batches) == 1:
        return batches[0]
    width_p = max(b.input_ids.shape[1] - b.response_width for b in batches)
    width_t = max(b.response_width for b in batches)

    def pad(x: Tensor, left: int, right: int, value) -> Tensor:
        return torch.nn.functional.pad(x, (left, right), value=value)

    parts = []
    offset = 0
    for b in batches:
        left = width_p - (b.input_ids.shape[1] - b.response_width)
        right = width_t - b.response_width
        rb = RolloutBatch(
            input_ids=pad(b.input_ids, left, right, pad_id),
            attention_mask=pad(b.attention_mask, left, right, 0),
            response_mask=pad(b.response_mask, 0, right, 0),
            group_index=b.group_index + offset,
            prompt_index=b.prompt_index,
            rewards=b.rewards,
            valid=b.valid,
            truncated=b.truncated,
            completions=b.completions,
            statuses=b.statuses,
            components=b.components,
            sampling_logp=None if b.sampling_logp is None else pad(b.sampling_logp, 0, right, 0.0),  # (perf)
            sampling_entropy=None if b.sampling_entropy is None else pad(b.sampling_entropy, 0, right, 0.0),
            sampling_temperature=b.sampling_temperature,
            sampler_logp=None if b.sampler_logp is None else pad(b.sampler_logp, 0, right, 0.0),
            policy_version=b.policy_version,
            token_turn=None if b.token_turn is None else pad(b.token_turn, 0, right, -1),
            turn_rewards=b.turn_rewards,
            turn_passed=b.turn_passed,
            turns=b.turns,
            ends=b.ends,
            transcripts=b.transcripts,
        )
        offset += int(b.group_index.max()) + 1 if len(b.group_index) else 0
        parts.append(rb)
    sampler = [p.sampler_logp for p in parts if p.sampler_logp is not None]
    versions = [p.policy_version for p in parts if p.policy_version is not None]
    return RolloutBatch(
        input_ids=torch.cat([p.input_ids for p in parts]),
        attention_mask=torch.cat([p.attention_mask for p in parts]),
        response_mask=torch.cat([p.response_mask for p in parts]),
        group_index=torch.cat([p.group_index for p in parts]),
        prompt_index=torch.cat([p.prompt_index for p in parts]),
        rewards=torch.cat([p.rewards for p in parts]),
        valid=torch.cat([p.valid for p in parts]),
        truncated=torch.cat([p.truncated for p in parts]),
        completions=[c for p in parts for c in p.completions],
        statuses=[s for p in parts for s in p.statuses],
        components={k: torch.cat([p.components[k] for p in parts]) for k in parts[0].components},
        **reusable_logprobs(parts),
        sampler_logp=torch.cat(sampler) if len(sampler) == len(parts) else None,  # every part's, or none
        policy_version=torch.cat(versions) if len(versions) == len(parts) else None,
        **episode_fields(parts),
    )


def episode_fields(parts: list[RolloutBatch]) -> dict:
    """The joined multi-turn fields when every part has them (a multi-turn environment's rounds), else none.
    turn_rewards / turn_passed are padded with 0 / False to the most turns of any part."""
    found = [(p.turns, p.token_turn, p.turn_rewards) for p in parts]
    known = [(n, tt, r) for n, tt, r in found if n is not None and tt is not None and r is not None]
    if len(known) < len(parts):
        return {}
    k = max(r.shape[1] for _, _, r in known)

    def widen(x: Tensor, value) -> Tensor:
        return torch.nn.functional.pad(x, (0, k - x.shape[1]), value=value)

    passed = [p.turn_passed for p in parts]
    return {
        "turns": torch.cat([n for n, _, _ in known]),  # [N]
        "token_turn": torch.cat([tt for _, tt, _ in known]),  # [N, T] (each part already padded to one width)
        "turn_rewards": torch.cat([widen(r, 0.0) for _, _, r in known]),  # [N, K]
        "turn_passed": torch.cat([widen(x, False) for x in passed if x is not None])
        if all(x is not None for x in passed)
        else None,
        "ends": [e for p in parts for e in p.ends or []],
        "transcripts": [t for p in parts for t in p.transcripts or []],
    }


def from_trajectories(
    trajectories: list[Trajectory], group_index: Tensor, prompt_index: Tensor, pad_id: int, max_turns: int, **engine
) -> RolloutBatch:
    """Episodes as a batch: each prompt left-padded to the widest, every id after it in the completion region
    (padded after its last id). `engine`: sampling_logp / sampling_entropy / sampling_temperature / sampler_logp
    as the rollout engine vouched for them (rlx.rollout.collect). Reward, status and components are the
    episode's verdict's (episode-level credit); each turn's reward and success go to turn_rewards / turn_passed."""
    n, device = len(trajectories), group_index.device
    width_p = max(len(t.prompt_ids) for t in trajectories)
    width_t = max(1, max(len(t.ids) for t in trajectories))
    input_ids = torch.full((n, width_p + width_t), pad_id, dtype=torch.long)  # [N, P + T]
    attention = torch.zeros(n, width_p + width_t, dtype=torch.long)  # [N, P + T]
    response_mask = torch.zeros(n, width_t, dtype=torch.long)  # [N, T]
    token_turn = torch.full((n, width_t), -1, dtype=torch.long)  # [N, T]
    turn_rewards = torch.zeros(n, max_turns)  # [N, K]
    turn_passed = torch.zeros(n, max_turns, dtype=torch.bool)  # [N, K]
    for i, t in enumerate(trajectories):
        p, m = len(t.prompt_ids), len(t.ids)
        input_ids[i, width_p - p : width_p + m] = torch.tensor(t.prompt_ids + t.ids, dtype=torch.long)
        attention[i, width_p - p : width_p + m] = 1
        response_mask[i, :m] = torch.tensor(t.sampled, dtype=torch.long)
        token_turn[i, :m] = torch.tensor(t.turn, dtype=torch.long)
        turn_rewards[i, : t.turns] = torch.tensor([float(v.reward) for v in t.turn_verdicts])
        turn_passed[i, : t.turns] = torch.tensor([v.status == Status.PASS for v in t.turn_verdicts])
    names = sorted({k for t in trajectories for k in t.verdict.components})
    return RolloutBatch(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        response_mask=response_mask.to(device),
        group_index=group_index,
        prompt_index=prompt_index,
        rewards=torch.tensor([float(t.verdict.reward) for t in trajectories], device=device),
        valid=torch.tensor([t.verdict.status != Status.INFRA for t in trajectories], device=device),
        truncated=torch.tensor([t.truncated for t in trajectories], device=device),
        completions=[t.texts[-1] if t.texts else "" for t in trajectories],
        statuses=[t.verdict.status.value for t in trajectories],
        components={
            k: torch.tensor([float(t.verdict.components.get(k, 0.0)) for t in trajectories], device=device)
            for k in names
        },
        token_turn=token_turn.to(device),
        turn_rewards=turn_rewards.to(device),
        turn_passed=turn_passed.to(device),
        turns=torch.tensor([t.turns for t in trajectories], device=device),
        ends=[t.end.value for t in trajectories],
        transcripts=[transcript(t) for t in trajectories],
        **engine,
    )


def transcript(t: Trajectory) -> dict:
    """What samples.jsonl shows of an episode: each turn's text, reward and status, the observations."""
    return {
        "turns": [
            {"text": text, "reward": float(v.reward), "status": v.status.value}
            for text, v in zip(t.texts, t.turn_verdicts, strict=False)
        ],
        "observations": t.observations,
        "end": t.end.value,
    }


def episode_logprobs(trajectories: list[Trajectory], width: int) -> Tensor:
    """[N, T] the sampled ids' log-probs as the engine reported them (0 on inserted ids and padding)."""
    out = torch.zeros(len(trajectories), width)  # [N, T]
    for i, t in enumerate(trajectories):
        out[i, : len(t.logprobs)] = torch.tensor(t.logprobs, dtype=torch.float32)
    return out


def reusable_logprobs(parts: list[RolloutBatch]) -> dict:
    """(perf) The joined sampling_logp / sampling_entropy [N, T] when every part has them at one temperature,
    else none (prepare then runs its forward)."""
    temperatures = {p.sampling_temperature for p in parts}
    logps = [p.sampling_logp for p in parts if p.sampling_logp is not None]
    entropies = [p.sampling_entropy for p in parts if p.sampling_entropy is not None]
    if len(temperatures) != 1 or len(logps) < len(parts) or len(entropies) < len(parts):
        return {}
    return {
        "sampling_logp": torch.cat(logps),  # [N, T]
        "sampling_entropy": torch.cat(entropies),  # [N, T]
        "sampling_temperature": temperatures.pop(),
    }
