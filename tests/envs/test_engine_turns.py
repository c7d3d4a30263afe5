"""Multi-turn rounds through the real rollout engines (rlx's engine and HF generate) on a small random model:
every turn continues exactly the ids of the turns before it, and the ids each turn sampled reach the batch
unchanged, with the engine's log-probs at their places (the must-show's end-to-end half)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlx.envs.protocol import Turn
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import Rollout, RolloutConfig, generate_and_score
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate

TOK = build_char_tokenizer()
ROWS = [{"prompt": "12+34="}, {"prompt": "5+6="}]


class Recording:
    """Wraps an engine: each call's contexts (token ids; None for text prompts) and each row's sampled ids and
    log-probs."""

    def __init__(self, engine) -> None:
        self.engine, self.overlap_scoring, self.max_staleness = engine, engine.overlap_scoring, 0
        self.calls: list[tuple[list[list[int]] | None, list[list[int]], list[list[float]]]] = []

    def __call__(self, model, tokenizer, request, on_finished=None):
        gen = self.engine(model, tokenizer, request, on_finished)
        response = gen.input_ids[:, -gen.response_width :]
        keep = gen.response_mask.bool()
        sampled = [row[m].tolist() for row, m in zip(response, keep, strict=True)]
        logps = [row[m].tolist() for row, m in zip(gen.logprobs, keep, strict=True)]
        self.calls.append((request.prompt_ids, sampled, logps))
        return gen


class ThreeTurns:
    """Never done: every episode takes max_turns = 3 turns; the observation names the turn."""

    max_turns, required_fields = 3, ()

    def reset(self, rows):
        return [{"turn": 0} for _ in rows]

    def step(self, states, completions):
        for s in states:
            s["turn"] += 1
        return [Turn(Verdict(0.5 * s["turn"], Status.FAIL), False, f" [{s['turn']}] ") for s in states]

    def close(self):
        pass


@pytest.mark.parametrize("engine", [RolloutEngine(False, True, True), HFGenerate(False)], ids=["engine", "hf"])
def test_every_turn_continues_the_exact_ids_and_reaches_the_batch_unchanged(engine):
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(TOK),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    model = LlamaForCausalLM(config).eval()
    recording = Recording(engine)
    rollout = Rollout(model, TOK, recording, reward=None, env=ThreeTurns(), max_context_tokens=128)  # type: ignore[arg-type]
    batch = generate_and_score(rollout, ROWS, [0, 1], RolloutConfig(2, 2, 5, 1.0, None))
    assert len(recording.calls) == 3  # turn 0 (text prompts, one prefill per group), then turns 1 and 2
    assert recording.calls[0][0] is None
    n = batch.input_ids.shape[0]
    width_p = batch.input_ids.shape[1] - batch.response_width
    for i in range(n):
        row = batch.input_ids[i][batch.attention_mask[i].bool()].tolist()  # the episode's ids, unpadded
        prompt = TOK.encode(ROWS[i // 2]["prompt"], add_special_tokens=False)
        context = list(prompt)
        for k, (contexts, sampled, logps) in enumerate(recording.calls):
            if contexts is not None:
                assert contexts[i] == context  # turn k continued exactly the ids before it
            context += sampled[i]
            if k < 2:
                context += TOK.encode(f" [{k + 1}] ", add_special_tokens=False)
            completion = batch.input_ids[i, width_p:]
            assert completion[batch.token_turn[i] == k].tolist() == sampled[i]  # as sampled, in order
            if batch.sampler_logp is not None:  # rlx's engine and HF report μ
                assert batch.sampler_logp[i][batch.token_turn[i] == k].tolist() == logps[i]
        assert row == context  # the trained sequence is the prompt, the turns and the observations, nothing else
        assert int(batch.turns[i]) == 3 and batch.ends[i] == "max_turns"
        assert batch.turn_rewards[i].tolist() == [0.5, 1.0, 1.5] and float(batch.rewards[i]) == 1.5
    observation = batch.attention_mask[:, width_p:].bool() & ~batch.response_mask.bool()
    assert batch.sampler_logp is None or batch.sampler_logp[observation].eq(0).all()  # no log-prob on context
