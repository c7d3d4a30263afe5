"""What one RL step learns from its batch, after collection:

    prepare — reward shaping, reference and sampling-policy log-probs, per-token rewards, critic values and
              advantages (no gradients), returned as a new batch; the sampling policy's log-probs are the
              rollout engine's own where it vouches for them (`reused_logprobs`), else one more forward
    update  — algo.update_epochs × algo.minibatches optimiser steps over the batch; each step accumulates the
              gradients of its micro-batches (algo.micro_batch_size sequences, or an algo.micro_batch_tokens
              budget) and is skipped, leaving weights and optimiser state untouched, when its loss or gradient
              is not finite

Every forward runs one trimmed micro-batch at a time (rlx.forward.logprobs). The aggregation weights of a
minibatch are computed from its whole mask before it is split, so a micro-batched loss and gradient equal the
unsplit ones (rlx.algos.aggregation).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import torch
from torch import Tensor

from rlx.algos.aggregation import token_mean
from rlx.algos.objective import LossTerms, TokenInputs, objective, per_token_rewards
from rlx.algos.token_select import TokenSelection
from rlx.distributed import World, average_gradients, global_weights
from rlx.errors import RlxError
from rlx.forward.logprobs import (
    forward_logprobs,
    map_micro_batches,
    plan_micro_batches,
    sequence_logprobs,
    trim_padding,
)
from rlx.models.parts import Models
from rlx.rollout.batch import RolloutBatch

log = logging.getLogger(__name__)


class NonFiniteUpdates(RlxError):
    """Too many optimiser steps in a row had a non-finite loss or gradient."""


class NonFiniteGuard:
    """Counts skipped updates (`train/skipped_updates`) and stops the run after `max_in_row` in a row."""

    def __init__(self, max_in_row: int) -> None:
        self.max_in_row, self.skipped = max_in_row, 0
        self.in_row: dict[str, int] = defaultdict(int)

    def allows(self, name: str, loss: torch.Tensor, grad_norm: torch.Tensor) -> bool:
        if bool(torch.isfinite(loss)) and bool(torch.isfinite(grad_norm)):
            self.in_row[name] = 0
            return True
        self.skipped += 1
        self.in_row[name] += 1
        log.warning(
            "skipping a %s update: loss %s, gradient norm %s (%d in a row)",
            name,
            float(loss),
            float(grad_norm),
            self.in_row[name],
        )
        if self.in_row[name] >= self.max_in_row:
            raise NonFiniteUpdates(
                f"{self.in_row[name]} {name} updates in a row had a non-finite loss or gradient "
                f"(algo.max_skipped_updates={self.max_in_row}); the weights are those before the first of them. "
                "Lower the learning rate (algo.optimizer.lr), check the reward for huge values, or raise "
                "algo.max_skipped_updates"
            )
        return False

    def state_dict(self) -> dict:
        return {"skipped": self.skipped, "in_row": dict(self.in_row)}

    def load_state_dict(self, state: dict) -> None:
        self.skipped = state["skipped"]
        self.in_row.update(state["in_row"])


def needs_old_logp(algo) -> bool:
    """The sampling policy's log-probs are needed (the rollout engine's, or else a forward) unless the only
    update is on the sampling policy itself (one epoch, one minibatch: its own detached log-probs are the old
    ones) and no KL sits in the reward, and the token selection does not read them."""
    in_reward = algo.uses_reference and algo.kl.in_reward
    return algo.update_epochs * algo.minibatches > 1 or in_reward or algo.token_select.reads_old_logp


def reused_logprobs(batch: RolloutBatch, temperature: float) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The rollout engine's (log-probs, entropies) [N, T] of the sampled tokens, to stand for the sampling
    policy's forward: present only where the engine found them equal to that forward to float rounding
    (rlx.rollout.engine.exact) and taken at the update's temperature. The batch must come from the policy being
    updated, at its current weights (RLModule.training_step prepares right after collecting). None: run the
    forward."""
    if batch.sampling_logp is None or batch.sampling_entropy is None:
        return None
    if batch.sampling_temperature != temperature:
        log.warning(
            "the rollout's log-probs are at temperature %s, the update's at algo.temperature=%s: running the "
            "sampling policy's forward instead of reusing them",
            batch.sampling_temperature,
            temperature,
        )
        return None
    return batch.sampling_logp, batch.sampling_entropy


def engine_entropy(batch: RolloutBatch, temperature: float) -> bool:
    """Whether the batch carries the rollout engine's exact entropies of the sampling policy at the update's
    temperature (see reused_logprobs): then the sampling policy's entropy metric needs no forward."""
    exact = batch.sampling_logp is not None and batch.sampling_entropy is not None
    return exact and batch.sampling_temperature == temperature


@torch.no_grad()
def prepare(batch: RolloutBatch, algo, advantage, models: Models) -> tuple[RolloutBatch, dict]:
    """The batch with sample_mask, scores, ref_logp, old_logp, token_rewards, values, advantages and returns
    filled in, and the sampling policy's entropy (policy/entropy) when old_logp is set here (from the rollout
    engine's decode log-probs, or else a forward of `models.policy`) or the engine's entropies are exact (else the
    update's first forward computes it)."""
    policy, reference, critic = models.policy, models.reference, models.critic
    scores, sample_mask = algo.shaping(batch)  # [N], [N] clipped / length-penalised; overlong-filtered
    scores = torch.where(sample_mask, scores, torch.zeros_like(scores))  # [N]
    args = (batch.input_ids, batch.attention_mask, batch.response_width, algo.temperature, algo.micro_batch_size)
    chunks = {"micro_batch_tokens": algo.micro_batch_tokens, "pack": algo.pack_sequences}
    ref_logp = old_logp = None
    metrics = {}
    if algo.uses_reference:
        assert reference is not None, "rlx.train.build gives an algorithm that uses a reference its reference"
        with reference.forward_model() as ref_model:
            ref_logp = sequence_logprobs(ref_model, *args, **chunks)  # [N, T]
    mask = batch.response_mask.float() * sample_mask[:, None]  # [N, T]
    entropy = None
    # the engine's log-probs, not vouched equal to the trainer's: run the forward to measure the mismatch
    measure = batch.sampler_logp is not None and batch.sampling_logp is None  # rlx.rollout.mismatch
    if needs_old_logp(algo) or measure:
        reused = reused_logprobs(batch, algo.temperature)
        old_logp, entropy = (
            reused if reused is not None else sequence_logprobs(policy, *args, **chunks, with_entropy=True)
        )  # [N, T] each
    elif engine_entropy(batch, algo.temperature):  # (perf) the update's forward then skips its entropy
        entropy = batch.sampling_entropy  # [N, T]
    if entropy is None and algo.token_select.reads_entropy:  # the minibatch's selection needs it up front
        entropy = sequence_logprobs(policy, *args, **chunks, with_entropy=True)[1]  # [N, T]
    if entropy is not None:
        metrics["policy/entropy"] = (entropy * global_weights(World.current(), token_mean, mask)).sum()
    kl = algo.kl(old_logp, ref_logp, old_logp) if algo.uses_reference and algo.kl.in_reward else None  # [N, T]
    token_rewards = per_token_rewards(scores, batch.response_mask, kl, algo.beta)  # [N, T]
    values = None
    if critic is not None:
        values = map_micro_batches(
            partial(critic, pack=algo.pack_sequences),
            batch.input_ids,
            batch.attention_mask,
            batch.response_width,
            algo.micro_batch_size,
            algo.micro_batch_tokens,
        )[0]  # [N, T]
    batch = replace(
        batch,
        sample_mask=sample_mask,
        scores=scores,
        ref_logp=ref_logp,
        old_logp=old_logp,
        entropy=entropy if algo.token_select.reads_entropy else None,
        token_rewards=token_rewards,
        values=values,
    )
    advantages, returns = advantage(batch)  # [N, T], [N, T] | None
    return replace(batch, advantages=advantages, returns=returns), metrics


@dataclass(frozen=True)
class Optimisation:
    """How the update applies its gradients: the policy's plain torch optimiser (and the critic's), the backward
    run on each micro-batch's loss (Lightning's manual_backward in the RLModule), and the guard that skips an
    optimiser step whose loss or gradient is not finite."""

    policy: torch.optim.Optimizer
    backward: Callable[[Tensor], None]
    guard: NonFiniteGuard
    critic: torch.optim.Optimizer | None = None  # with a critic (PPO): its optimiser


def update(batch: RolloutBatch, algo, models: Models, optimisation: Optimisation) -> dict[str, float]:
    """algo.update_epochs passes over the batch in algo.minibatches shuffled minibatches, one policy (and
    critic) optimiser step per minibatch. Returns each metric's mean over the steps."""
    n = batch.input_ids.shape[0]
    totals: dict[str, float] = defaultdict(float)
    steps = 0
    for _ in range(algo.update_epochs):
        order = torch.randperm(n, device=batch.input_ids.device)
        for rows in order.tensor_split(algo.minibatches):  # exactly `minibatches` steps, on every rank
            mb = batch.select(rows)
            metrics = policy_step(mb, algo, models.policy, optimisation)
            if models.critic is not None:
                metrics.update(critic_step(mb, algo, models.critic, optimisation))
            for key, value in metrics.items():
                totals[key] += float(value)
            steps += 1
    return {key: value / steps for key, value in totals.items()}


def micro_batches(mb: RolloutBatch, algo):
    """(rows, input_ids, attention_mask, T') of each trimmed micro-batch of a minibatch."""
    for rows in plan_micro_batches(mb.attention_mask.sum(-1), algo.micro_batch_size, algo.micro_batch_tokens):
        yield (rows, *trim_padding(mb.input_ids[rows], mb.attention_mask[rows], mb.response_width))


def policy_step(mb: RolloutBatch, algo, policy, optimisation: Optimisation) -> dict:
    """One optimiser step of the policy on minibatch `mb`: the objective's gradient accumulated over its
    micro-batches, clipped to algo.max_grad_norm, applied unless non-finite."""
    advantages = mb.advantages  # [n, T]
    assert advantages is not None, "policy_step needs a batch from prepare()"
    mask = mb.loss_mask().to(advantages.dtype)  # [n, T]
    world = World.current()  # several ranks: the normalisers of the minibatch over every rank's rows (rlx.distributed)
    weights, token_weights = global_weights(world, algo.aggregate, mask), global_weights(world, token_mean, mask)
    kl = algo.kl if algo.uses_reference else None
    kl_coef = algo.beta if algo.uses_reference and not algo.kl.in_reward else 0.0
    selection = algo.token_select(mb.entropy, mb.old_logp, advantages, mask)  # of the whole minibatch, or None
    bonus = algo.entropy.active  # an entropy bonus: π_θ's entropy with its gradient (rlx.algos.entropy)
    entropy_coef = algo.entropy.coefficient()  # [] one coefficient for every micro-batch of this step
    terms = LossTerms(algo.policy_loss, kl, kl_coef, entropy_coef)
    optimizer = optimisation.policy
    sums: dict[str, torch.Tensor] = {}
    optimizer.zero_grad(set_to_none=True)
    for rows, ids, attention, width in micro_batches(mb, algo):
        cut = (rows, slice(0, width))
        # the entropy of the sampling policy (this one, at its first update) unless prepare() had it
        with_entropy = mb.old_logp is None and not engine_entropy(mb, algo.temperature)
        logp, entropy = forward_logprobs(
            policy, ids, attention, width, algo.temperature, with_entropy, bonus, algo.pack_sequences
        )
        old_logp = mb.old_logp[cut] if mb.old_logp is not None else logp.detach()  # [m, T']
        sampler_logp = mb.sampler_logp[cut] if mb.sampler_logp is not None else old_logp  # [m, T'] μ
        tokens = TokenInputs(
            old_logp,
            advantages[cut],
            mask[cut],
            weights[cut],
            token_weights[cut],
            ref_logp=mb.ref_logp[cut] if mb.ref_logp is not None else None,  # [m, T']
            selection=TokenSelection(selection.keep[cut], selection.penalty[cut]) if selection is not None else None,
            # [m, T'] π_old / μ based (rlx.algos.correction); PPO's ratio stays π_θ / π_old
            correction=algo.rollout_correction(logp.detach(), old_logp, sampler_logp, advantages[cut], mask[cut]),
        )
        loss, metrics = objective(logp, tokens, terms, entropy if bonus else None)  # entropy [m, T'] with gradient
        optimisation.backward(loss)
        metrics["loss"] = loss.detach()
        if with_entropy and entropy is not None:
            metrics["policy/entropy"] = (entropy.detach() * token_weights[cut]).sum()
        for key, value in metrics.items():
            sums[key] = sums[key] + value if key in sums else value
    loss = sums.pop("loss")
    if bonus:  # the measured entropy: the token mean over every rank's trained tokens; the adaptive rule reads it
        kept = sums.get("loss/kept_frac", token_weights.sum())  # this rank's share of the trained tokens
        total, kept = world.sum([float(sums["loss/entropy"]), float(kept)])
        measured = total / kept if kept > 0 else float("nan")  # (no trained token: nothing measured)
        sums["loss/entropy"] = torch.tensor(measured, dtype=mask.dtype)
        sums["loss/entropy_coef"] = torch.tensor(entropy_coef, dtype=mask.dtype)
        algo.entropy.observe(float(sums["loss/entropy"]))
    average_gradients(world, policy.parameters())  # several ranks: one all-reduce per optimiser step
    norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), algo.max_grad_norm)
    if optimisation.guard.allows("policy", loss, norm):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {**sums, "optim/grad_norm": norm}


def critic_step(mb: RolloutBatch, algo, critic, optimisation: Optimisation) -> dict:
    """One optimiser step of the critic on the value loss (a token mean over the minibatch), micro-batched
    like the policy's."""
    old_values, returns = mb.values, mb.returns  # [n, T] each
    assert old_values is not None and returns is not None, "critic_step needs a batch from prepare() with a critic"
    mask = mb.loss_mask().to(old_values.dtype)  # [n, T]
    world = World.current()
    token_weights = global_weights(world, token_mean, mask)  # [n, T]
    loss = torch.zeros((), dtype=mask.dtype, device=mask.device)
    optimizer = optimisation.critic
    assert optimizer is not None, "a critic comes with its optimiser (Optimisation.critic)"
    optimizer.zero_grad(set_to_none=True)
    for rows, ids, attention, width in micro_batches(mb, algo):
        cut = (rows, slice(0, width))
        values = critic(ids, attention, width, pack=algo.pack_sequences)  # [m, T']
        part = (algo.critic.loss(values, old_values[cut], returns[cut]) * token_weights[cut]).sum()  # []
        optimisation.backward(part)
        loss = loss + part.detach()
    average_gradients(world, critic.parameters())
    norm = torch.nn.utils.clip_grad_norm_(critic.parameters(), algo.critic.max_grad_norm)
    if optimisation.guard.allows("critic", loss, norm):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {"loss/value": loss, "optim/critic_grad_norm": norm, "critic/value_mean": (mb.values * token_weights).sum()}
