"""`rollout=hf`: sampling completions with transformers' `generate` (their log-probs are read back by
rlx.rollout.logprobs)."""

from __future__ import annotations

import torch

from rlx.rollout.engine import Generation, OnFinished, decode_texts, response_layout


class HFGenerate:
    """`rollout=hf`: transformers' own `model.generate` (KV cache, every prompt copy prefilled, finished rows
    padded to the end). Kept as the reference the engine is measured against (bench/rollout.py) and as the
    fallback for a model the engine cannot drive. It reports no per-token log-probs, and no finished rows before
    it returns (`on_finished` is never called: generate keeps every row to the end)."""

    def __init__(self, overlap_scoring: bool) -> None:
        self.overlap_scoring = overlap_scoring  # see rlx.rollout.engine.Generator

    def __call__(
        self,
        model,
        tokenizer,
        prompts: list[str],
        max_new_tokens: int,
        temperature: float,
        greedy: bool,
        repeats: int = 1,
        on_finished: OnFinished | None = None,
    ) -> Generation:
        return generate(
            model, tokenizer, [p for p in prompts for _ in range(repeats)], max_new_tokens, temperature, greedy
        )


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], max_new_tokens: int, temperature: float, greedy: bool) -> Generation:
    """Continue each prompt once with HF `generate` (repeat prompts to get a group).

    Sampling is plain ancestral sampling at `temperature` (top-k and top-p explicitly off, whatever the
    model's generation_config says), so the log-probs `sequence_logprobs` computes at the same temperature
    are those of the distribution the tokens were really drawn from.
    """
    device = next(model.parameters()).device
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    sampling = (
        {"do_sample": False} if greedy else {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
    )
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        use_cache=True,
        **sampling,
    )  # [N, P + T']
    response = out[:, enc["input_ids"].shape[1] :]  # [N, T']
    input_ids, attention_mask, response_mask, truncated, response = response_layout(
        enc["input_ids"], enc["attention_mask"], response, tokenizer.eos_token_id, tokenizer.pad_token_id
    )
    return Generation(
        input_ids, attention_mask, response_mask, truncated, decode_texts(tokenizer, response, response_mask)
    )
