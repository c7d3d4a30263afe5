"""`rollout=hf`: sampling completions with transformers' `generate`, with the sampler's own per-token log-probs
(μ, from generate's processed scores) for the mismatch metrics (rlx.rollout.mismatch)."""

from __future__ import annotations

import torch

from rlx.rollout.generation import Generation, GenerationRequest, OnFinished, decode_texts, request_ids, response_layout
from rlx.rollout.staleness import check_max_staleness


class HFGenerate:
    """`rollout=hf`: transformers' own `model.generate` (KV cache, every prompt copy prefilled, finished rows
    padded to the end). Kept as the reference the engine is measured against (bench/rollout.py) and as the
    fallback for a model the engine cannot drive. It reports the sampler's per-token log-probs (never reused for
    the trainer's forward: the update runs its own, and the difference is the measured mismatch), and no finished
    rows before it returns (`on_finished` is never called: generate keeps every row to the end)."""

    def __init__(self, overlap_scoring: bool, max_staleness: int = 0) -> None:
        self.overlap_scoring = overlap_scoring  # see rlx.rollout.generation.Generator
        self.max_staleness = check_max_staleness(max_staleness)  # > 0: in a sampler process (async_collect)

    def __call__(
        self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None
    ) -> Generation:
        ids, mask = request_ids(tokenizer, request)  # [K, P] left-padded
        encoded = (ids.repeat_interleave(request.repeats, 0), mask.repeat_interleave(request.repeats, 0))  # [N, P]
        return generate(
            model, tokenizer, [], request.max_new_tokens, request.temperature, request.greedy, encoded=encoded
        )


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list[str],
    max_new_tokens: int,
    temperature: float,
    greedy: bool,
    encoded: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> Generation:
    """Continue each prompt once with HF `generate` (repeat prompts to get a group).

    Sampling is plain ancestral sampling at `temperature` (top-k and top-p explicitly off, whatever the
    model's generation_config says), so the log-probs `sequence_logprobs` computes at the same temperature
    are those of the distribution the tokens were really drawn from. When sampling, the Generation also carries
    μ, the sampler's own log-prob of each drawn token: log_softmax of generate's `scores` (`output_scores`: the
    logits after its logits processors, here the temperature alone, i.e. exactly the distribution it sampled
    from), gathered at the token. Greedy decoding (held-out evaluation) reports none. `encoded`: the prompts
    as left-padded (input_ids, attention_mask) [N, P] instead of `prompts` (token-id contexts).
    """
    device = next(model.parameters()).device
    if encoded is None:
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    else:
        enc = {"input_ids": encoded[0].to(device), "attention_mask": encoded[1].to(device)}
    sampling = (
        {"do_sample": False} if greedy else {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
    )
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        use_cache=True,
        output_scores=not greedy,
        return_dict_in_generate=True,
        **sampling,
    )
    response = out.sequences[:, enc["input_ids"].shape[1] :]  # [N, T']
    layout = response_layout(
        enc["input_ids"], enc["attention_mask"], response, tokenizer.eos_token_id, tokenizer.pad_token_id
    )
    texts = decode_texts(tokenizer, layout.response, layout.response_mask)
    fields = (layout.input_ids, layout.attention_mask, layout.response_mask, layout.truncated, texts)
    if greedy:
        return Generation(*fields)
    logps = sampled_logprobs(out.scores, response)  # [N, T']
    logps = torch.where(layout.response_mask.bool(), logps, torch.zeros_like(logps))  # 0 off the mask, as every engine
    return Generation(*fields, logprobs=logps, temperature=temperature)


def sampled_logprobs(scores: tuple[torch.Tensor, ...], tokens: torch.Tensor) -> torch.Tensor:
    """log μ(y_t): each step's processed scores [N, V] (logits / T: the distribution `generate` sampled from),
    log-softmaxed in float32 and gathered at the drawn token, one step at a time (never a [N, T', V] tensor;
    generate itself holds the T' score tensors until it returns). Args: scores, T' tensors [N, V]; tokens
    [N, T']. Returns [N, T'] float32 (rows that finished early hold pad's log-prob there: the caller masks them)."""
    steps = [torch.log_softmax(s.float(), -1).gather(-1, tokens[:, t, None]) for t, s in enumerate(scores)]  # [N, 1]
    return torch.cat(steps, dim=1)  # [N, T']
