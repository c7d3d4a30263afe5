"""One RL step's row of metrics.csv: what the batch, the rollout and the update measured, under the stable
metric names (`reward/`, `adv/`, `rollout/`, `time/`, `optim/`, `train/`, `loss/`, `policy/`). Every column
exists from the first step (a status that did not occur is 0, a mean of nothing is NaN), so the CSV's header
is fixed by the configuration (tests/e2e/test_metric_columns.py pins the default run's)."""

from __future__ import annotations

import torch

from rlx.envs.trajectory import EpisodeEnd
from rlx.rewards.base import Status
from rlx.rollout.batch import RolloutBatch
from rlx.rollout.collect import RolloutStats
from rlx.rollout.mismatch import batch_mismatch


def length_by_outcome(lengths, statuses: list[str], valid) -> dict:
    """rollout/length_pass and rollout/length_fail: mean completion length (tokens, eos included) of the
    completions that passed and of the scored ones that did not; NaN for a side with no completion (a mean of
    nothing), so both columns exist from the first step."""
    passed = torch.tensor([s == Status.PASS.value for s in statuses], device=lengths.device)  # [N]
    out = {}
    for name, rows in (("pass", passed & valid), ("fail", ~passed & valid)):
        out[f"rollout/length_{name}"] = lengths[rows].float().mean() if rows.any() else torch.tensor(float("nan"))
    return out


def step_metrics(
    batch: RolloutBatch, stats: RolloutStats, losses: dict[str, float], optim: dict, curriculum: dict
) -> dict:
    """The step's metrics from its prepared batch (every rank's rows), the rollout's `stats`, the update's
    `losses` (prepare's and update's means over ranks), `optim` (optim/lr, train/skipped_updates) and the
    curriculum sampler's own metrics."""
    valid = batch.valid  # scored samples (INFRA excluded); truncated ones count here even if filtered out
    mask = batch.response_mask.float()
    assert batch.advantages is not None and batch.sample_mask is not None, "step_metrics needs a prepared batch"
    adv = batch.advantages[batch.loss_mask() > 0]  # every trained response token
    if adv.numel() == 0:
        adv = torch.zeros(1, device=batch.rewards.device)
    n = max(1, len(batch.statuses))
    return {
        "reward/mean": batch.rewards[valid].mean() if valid.any() else torch.tensor(0.0),
        "reward/zero_std_frac": stats.zero_std_groups / max(1, stats.groups_generated),
        "reward/zero_std_frac_batch": stats.batch_zero_std_groups / max(1, stats.batch_groups),
        "reward/infra_frac": stats.status_counts.get(Status.INFRA.value, 0) / max(1, sum(stats.status_counts.values())),
        "adv/mean": adv.mean(),
        "adv/std": adv.std(unbiased=False),
        "rollout/length_mean": mask.sum(-1).mean(),
        "rollout/truncated_frac": batch.truncated.float().mean(),
        "rollout/tok_per_s": stats.tokens / max(stats.seconds, 1e-9),
        "rollout/seconds": stats.seconds,
        "rollout/rounds": float(stats.rounds),
        "time/generate": stats.generate_seconds,  # (perf) wall time inside the rollout engine
        "time/score": stats.score_seconds,  # (perf) time inside the reward, overlapping generation
        **stats.engine,  # the engine's own timings (rollout=vllm: time/weight_sync)
        **optim,
        "train/trained_frac": batch.sample_mask.float().mean(),
        **{f"reward/{k}": v[valid].float().mean() for k, v in batch.components.items() if valid.any()},
        # every status, 0 when absent: metrics.csv's columns do not come and go
        **{f"reward/status_{s.value.lower()}": sum(1 for x in batch.statuses if x == s.value) / n for s in Status},
        **curriculum,
        **losses,
        **length_by_outcome(mask.sum(-1), batch.statuses, valid),
        **batch_mismatch(batch),  # rollout/logprob_abs_diff_*, rollout/mismatch_*
        **episode_metrics(batch),  # multi-turn environments: rollout/turns_mean, reward/turn_<k>_*, ...
    }


def episode_metrics(batch: RolloutBatch) -> dict:
    """A multi-turn environment's metrics (none from a one-turn one): turns per episode, the share of the
    completion region's ids that are observations, each turn's mean reward and success rate over the valid
    episodes that took it (k from 1; NaN when none did), and why episodes ended (rlx.envs.trajectory.EpisodeEnd)."""
    if batch.turns is None or batch.turn_rewards is None or batch.turn_passed is None or batch.ends is None:
        return {}
    width = batch.response_width
    region = batch.attention_mask[:, batch.attention_mask.shape[1] - width :].float()  # [N, T] ids after the prompt
    observed = region - batch.response_mask.float()  # [N, T] 1 on inserted ids
    out: dict[str, torch.Tensor | float] = {
        "rollout/turns_mean": batch.turns.float().mean(),
        "rollout/obs_token_frac": observed.sum() / region.sum().clamp(min=1),
    }
    for k in range(batch.turn_rewards.shape[1]):
        took = batch.valid & (batch.turns > k)  # [N]
        nan = torch.tensor(float("nan"))
        out[f"reward/turn_{k + 1}_mean"] = batch.turn_rewards[took, k].mean() if took.any() else nan
        out[f"reward/turn_{k + 1}_success"] = batch.turn_passed[took, k].float().mean() if took.any() else nan
    n = max(1, len(batch.ends))
    for end in EpisodeEnd:
        out[f"rollout/episode_{end.value}_frac"] = sum(1 for e in batch.ends if e == end.value) / n
    return out
