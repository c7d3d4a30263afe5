"""rlx's rollout engine against HF `generate` and against the trainer's forward: the same greedy tokens, decode
log-probs equal to `sequence_logprobs` to 1e-5 (also after finished rows left the batch), one prefill per
distinct prompt, and a decode batch that shrinks as sequences finish."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

import rlx.rollout.engine as engine_module
from rlx.forward.logprobs import sequence_logprobs
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate
from rlx.rollout.generation import GenerationRequest

from .conftest import PROMPTS


def float32_tolerance(model, gen, temperature: float) -> tuple[float, float]:
    """The tolerance for the engine's decode against the trainer's forward (log-probs, entropies), derived from
    this machine's float32 arithmetic rather than fixed on one machine.

    Both compute the same float64-exact quantity x in float32, summing in another order (a cached decode's
    [1, d] matmuls and its attention over the cache, against one [T, d] pass): |engine - trainer| <=
    |engine - x| + |trainer - x|. The trainer's own rounding error r = max |trainer - x| over the completion
    tokens is measured against the same forward in float64 (x to ~1e-16); the engine's comes from the same
    kernels on the same magnitudes, so it is of the same size, but the maximum over a sample of tokens is
    itself random: each side is allowed 2r, hence 4r. Measured r: ~3e-6 on an AVX2 EPYC (where the old fixed
    1e-5 failed at 1.14e-5, ENV.md); a real error (a wrong position, temperature or cache slot) is >= 1e-3."""
    exact = copy.deepcopy(model).double()
    args = (gen.input_ids, gen.attention_mask, gen.response_width, temperature, None)
    lp32, ent32 = sequence_logprobs(model, *args, with_entropy=True)
    lp64, ent64 = sequence_logprobs(exact, *args, with_entropy=True)
    mask = gen.response_mask.bool()
    rounding = [float((a.detach().double() - b.detach())[mask].abs().max()) for a, b in ((lp32, lp64), (ent32, ent64))]
    assert all(0 < r < 1e-4 for r in rounding), rounding  # float32 noise, not a float64 forward that differs
    return 4 * rounding[0], 4 * rounding[1]


def test_greedy_matches_hf_generate(model_and_tokenizer):
    model, tok = model_and_tokenizer
    mine = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 8, 1.0, greedy=True, repeats=2)
    )
    theirs = HFGenerate(overlap_scoring=True)(model, tok, GenerationRequest(PROMPTS, 8, 1.0, greedy=True, repeats=2))
    assert torch.equal(mine.input_ids, theirs.input_ids)
    assert torch.equal(mine.attention_mask, theirs.attention_mask)
    assert torch.equal(mine.response_mask, theirs.response_mask)
    assert torch.equal(mine.truncated, theirs.truncated)
    assert mine.texts == theirs.texts
    assert theirs.logprobs is None  # HF's path reports none


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_decode_logprobs_equal_the_trainers_forward(model_and_tokenizer, temperature):
    model, tok = model_and_tokenizer
    torch.manual_seed(0)
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 12, temperature, greedy=False, repeats=4)
    )
    assert gen.input_ids.shape[0] == 16 and gen.logprobs.shape == gen.response_mask.shape
    trainer, entropy = sequence_logprobs(
        model, gen.input_ids, gen.attention_mask, gen.response_width, temperature, None, with_entropy=True
    )
    mask = gen.response_mask.bool()
    assert (gen.logprobs[~mask] == 0).all() and (gen.entropy[~mask] == 0).all()
    logp_tol, entropy_tol = float32_tolerance(model, gen, temperature)
    assert torch.allclose(gen.logprobs[mask], trainer[mask].detach(), atol=logp_tol, rtol=0)
    assert (gen.logprobs[mask] < 0).all()
    assert torch.allclose(gen.entropy[mask], entropy[mask], atol=entropy_tol, rtol=0)  # the distribution's entropy
    assert (gen.entropy[mask] > 0.1).all() and gen.entropy[mask].std() > 0.01  # not a constant
    assert gen.reusable and gen.temperature == temperature


def test_layout_matches_the_rollout_batch_contract(llama):
    model, tok = llama
    torch.manual_seed(1)
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 6, 1.0, greedy=False, repeats=3)
    )
    width_p = gen.input_ids.shape[1] - gen.response_width
    enc = tok(PROMPTS, padding=True, add_special_tokens=False, return_tensors="pt")
    assert torch.equal(gen.input_ids[:, :width_p], enc["input_ids"].repeat_interleave(3, 0))  # rows k·G .. k·G+G−1
    response = gen.input_ids[:, width_p:]
    for row, mask, text, trunc in zip(response, gen.response_mask, gen.texts, gen.truncated, strict=True):
        kept = row[mask.bool()].tolist()
        assert (tok.eos_token_id in kept) == (not trunc)
        if not trunc:  # the eos is the completion's last token, then padding
            assert kept[-1] == tok.eos_token_id and kept.count(tok.eos_token_id) == 1
        assert (row[~mask.bool()] == tok.pad_token_id).all()
        assert text == tok.decode([t for t in kept if t != tok.eos_token_id])
    assert torch.equal(gen.attention_mask[:, width_p:], gen.response_mask)


def test_one_prefill_per_prompt_and_finished_rows_leave(llama, monkeypatch, scripted_finishes):
    """Scripted finishes: slots 0, 5, 6 sample eos at step 1, slot 3 at step 2 (no eos otherwise)."""
    model, tok = llama
    scripted_finishes(tok, {1: [0, 5, 6], 2: [3]})
    calls = []
    forward = type(model).forward

    @functools.wraps(forward)
    def recorded(self, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(self, **kwargs)

    monkeypatch.setattr(type(model), "forward", recorded)
    torch.manual_seed(2)
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 6, 1.0, greedy=False, repeats=3)
    )
    width_p = gen.input_ids.shape[1] - gen.response_width
    assert calls[0] == (4, width_p)  # the prefill: 4 distinct prompts, not 12 copies
    assert [batch for batch, _ in calls[1:]] == [12, 9, 8, 8, 8]  # decode batches shrink as rows finish
    assert sorted(gen.response_mask.sum(-1).tolist()) == [2, 2, 2, 3] + [6] * 8
    assert int(gen.truncated.sum()) == 8
    # The survivors' keys and values were moved into the freed slots, not corrupted: their decode log-probs
    # still equal the trainer's forward over the finished batch.
    trainer = sequence_logprobs(model, gen.input_ids, gen.attention_mask, gen.response_width, 1.0, None)
    mask = gen.response_mask.bool()
    assert torch.allclose(
        gen.logprobs[mask], trainer[mask].detach(), atol=float32_tolerance(model, gen, 1.0)[0], rtol=0
    )


def test_empty_prompt_is_refused(llama):
    model, tok = llama
    with pytest.raises(ValueError, match="at least one token"):
        RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
            model, tok, GenerationRequest(["1+1=", ""], 4, 1.0, greedy=False)
        )


def test_compiled_decode_step_traces_one_graph_per_batch_bucket(llama, monkeypatch):
    """compile=true on a CPU, with a backend that counts the graphs dynamo hands it (and runs them eagerly):
    the static cache layout keeps the shapes fixed across steps, so a graph is traced only when the decode
    batch drops into a smaller power-of-two bucket; the tokens and log-probs are the eager engine's."""
    model, tok = llama
    graphs = []

    def counting_backend(graph, example_inputs):
        graphs.append(graph)
        return graph.forward

    eos, sample, script, step = tok.eos_token_id, engine_module.sample_tokens, {2: [0, 1, 2, 3, 4]}, [0]

    def scripted(logits, temperature, greedy, out=None):  # 12 rows, 5 finish at step 2: buckets 12 then 7 → 8
        token, _, entropy = sample(logits, temperature, greedy, out)
        token[token == eos] = tok.convert_tokens_to_ids("x")
        token[script.get(step[0], [])] = eos
        step[0] += 1
        scores = logits.float() / temperature
        return token, scores.gather(-1, token[:, None]).squeeze(-1) - torch.logsumexp(scores, -1), entropy

    monkeypatch.setattr(engine_module, "sample_tokens", scripted)
    compiled = RolloutEngine(compile=True, overlap_scoring=True, reuse_logprobs=True)
    compiled.backend = counting_backend
    out = compiled(model, tok, GenerationRequest(PROMPTS, 6, 1.0, greedy=True, repeats=3))
    assert len(graphs) == 2  # batch 12 (steps 1–2), then bucket 8 (steps 3–5): no graph per step
    step[0] = 0
    eager = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 6, 1.0, greedy=True, repeats=3)
    )
    assert torch.equal(out.input_ids, eager.input_ids) and torch.equal(out.response_mask, eager.response_mask)
    assert torch.allclose(out.logprobs, eager.logprobs, atol=1e-5, rtol=0)
