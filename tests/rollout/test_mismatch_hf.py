"""rollout=hf reports the sampler's own log-probs (μ, from generate's processed scores), so the mismatch metrics
exist for every engine: in float32 they equal the trainer's forward of the same weights to float rounding (at
a temperature other than 1, so a μ taken before the temperature would show), and the update measures them."""

from __future__ import annotations

import dataclasses

import torch

from rlx.forward.logprobs import sequence_logprobs
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import to_batch
from rlx.rollout.generate import HFGenerate
from rlx.rollout.generation import GenerationRequest
from rlx.rollout.mismatch import batch_mismatch, mismatch_metrics

from .conftest import PROMPTS

# float32 on both sides, generate's incremental KV-cache decode against one full forward: other summation orders,
# ~1e-6 per log-prob (the engine's own bound against the forward is 1e-5, tests/rollout/test_engine.py); at
# T = 0.7 a μ missing the temperature would be off by ~0.1 nats on these peaked logits
TOLERANCE = 1e-4


def test_hf_generate_logprobs_are_the_sampling_distributions(model_and_tokenizer):
    model, tok = model_and_tokenizer
    torch.manual_seed(0)
    gen = HFGenerate(overlap_scoring=False)(model, tok, GenerationRequest(PROMPTS, 12, 0.7, greedy=False, repeats=4))
    assert gen.logprobs is not None and gen.temperature == 0.7 and not gen.reusable  # μ, never π_old
    mask = gen.response_mask
    assert (gen.logprobs[mask == 0] == 0).all() and (gen.logprobs[mask > 0] < 0).all()
    with torch.no_grad():
        trainer = sequence_logprobs(model, gen.input_ids, gen.attention_mask, gen.response_width, 0.7, None)
        at_one = sequence_logprobs(model, gen.input_ids, gen.attention_mask, gen.response_width, 1.0, None)
    m = mismatch_metrics(gen.logprobs, trainer, mask)
    assert m["rollout/logprob_abs_diff_max"] < TOLERANCE and m["rollout/mismatch_ratio_outside_frac"] == 0
    assert m["rollout/mismatch_kl"] < TOLERANCE**2  # k3 ≈ (log r)² / 2
    assert mismatch_metrics(gen.logprobs, at_one, mask)["rollout/logprob_abs_diff_max"] > 100 * TOLERANCE
    batch = to_batch(gen, [Verdict(1.0, Status.PASS)] * 16, [0, 1, 2, 3], 4, [])  # what the trainer's step holds
    assert batch.sampling_logp is None  # not taken for π_old: prepare runs the forward, and the step logs
    assert set(batch_mismatch(dataclasses.replace(batch, old_logp=trainer))) == set(m)  # rollout/logprob_abs_diff_*
    greedy = HFGenerate(overlap_scoring=False)(model, tok, GenerationRequest(PROMPTS, 12, 1.0, greedy=True))
    assert greedy.logprobs is None  # held-out decoding: no sampling distribution to report
