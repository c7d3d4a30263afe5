"""Sampling completions with the KV cache (their log-probs are read back by rlx.rollout.logprobs)."""

from __future__ import annotations

import torch


@torch.no_grad()
def generate(model, tokenizer, prompts: list[str], max_new_tokens: int, temperature: float, greedy: bool):
    """Continue each prompt once (repeat prompts to get a group). Returns
    input_ids [N, P + T], attention_mask [N, P + T], response_mask [N, T], truncated [N], texts (up to eos).

    Sampling is plain ancestral sampling at `temperature` (top-k and top-p explicitly off, whatever the
    model's generation_config says), so the log-probs `sequence_logprobs` computes at the same temperature
    are those of the distribution the tokens were really drawn from.
    """
    device = next(model.parameters()).device
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    sampling = {"do_sample": False} if greedy else {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
    out = model.generate(
        **enc, max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, use_cache=True, **sampling,
    )  # [N, P + T']
    width_p = enc["input_ids"].shape[1]
    response = out[:, width_p:]  # [N, T']
    is_eos = response == tokenizer.eos_token_id  # [N, T']
    # a token belongs to the response if no eos came strictly before it
    before_eos = (is_eos.long().cumsum(-1) - is_eos.long()) == 0  # [N, T']
    response_mask = before_eos.long()  # [N, T']
    truncated = ~is_eos.any(-1)  # [N]
    response = torch.where(before_eos, response, torch.full_like(response, tokenizer.pad_token_id))
    input_ids = torch.cat([enc["input_ids"], response], dim=1)  # [N, P + T']
    attention_mask = torch.cat([enc["attention_mask"], response_mask], dim=1)  # [N, P + T']
    texts = []
    for row, mask in zip(response.tolist(), response_mask.tolist()):
        tokens = [tok for tok, keep in zip(row, mask) if keep and tok != tokenizer.eos_token_id]
        texts.append(tokenizer.decode(tokens, skip_special_tokens=False))
    return input_ids, attention_mask, response_mask, truncated, texts
