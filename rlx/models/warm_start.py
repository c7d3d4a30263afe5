"""Supervised warm start (SFT) of a freshly initialised model, cached by everything that determines it.

A random-init tiny model never earns a reward on 2-digit sums, so RL needs a starting policy that is
roughly right. Some initialisations get stuck on a loss plateau (measured: about one seed in eight); the
warm start therefore checks that greedy decoding reproduces the teacher on a sample of its own corpus, and
retries with a new initialisation seed (and a smaller init scale) when it does not, rather than hoping.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class WarmStartConfig:
    steps: int
    batch_size: int
    lr: float
    warmup_steps: int
    corpus_size: int
    max_attempts: int
    seed: int
    # A stuck initialisation sits on a loss plateau from early on (≈ 0.74 on the arithmetic default); a
    # healthy one is far below it by then. At `plateau_check_step` an attempt whose mean loss over the last
    # 100 steps is above the task's `warm_start_plateau_loss` is abandoned instead of trained to the end.
    plateau_check_step: int
    retry_init_std: float  # init scale of retries (measured: 0.08 unsticks a seed stuck at 0.02)

    def __post_init__(self) -> None:
        counts = {"steps": self.steps, "batch_size": self.batch_size, "corpus_size": self.corpus_size}
        counts["max_attempts"] = self.max_attempts
        for key, value in counts.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"model.warm_start.{key} must be a count >= 1 (got {value!r})")
        if not (math.isfinite(self.lr) and self.lr > 0) or self.warmup_steps < 0 or not self.retry_init_std > 0:
            raise ValueError(
                f"model.warm_start.lr and retry_init_std must be > 0 and warmup_steps >= 0 (got {self.lr!r}, "
                f"{self.retry_init_std!r}, {self.warmup_steps!r})"
            )


def encode_examples(tokenizer, examples: list[tuple[str, str]]) -> tuple[Tensor, Tensor, Tensor]:
    """Right-padded `prompt + completion + eos`: ids [N, L], attention mask [N, L], labels [N, L]
    (-100 outside the completion, so only the answer is imitated)."""
    prompts = tokenizer([p for p, _ in examples], add_special_tokens=False)["input_ids"]
    completions = tokenizer([c for _, c in examples], add_special_tokens=False)["input_ids"]
    ids, labels = [], []
    for p, c in zip(prompts, completions, strict=True):
        c = c + [tokenizer.eos_token_id]
        ids.append(p + c)
        labels.append([-100] * len(p) + c)
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), tokenizer.pad_token_id, dtype=torch.long)
    label_ids = torch.full((len(ids), width), -100, dtype=torch.long)
    for row, (x, y) in enumerate(zip(ids, labels, strict=True)):
        input_ids[row, : len(x)] = torch.tensor(x)
        label_ids[row, : len(y)] = torch.tensor(y)
    lengths = torch.tensor([len(x) for x in ids])
    attention_mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return input_ids, attention_mask, label_ids


def warmup_cosine(warmup_steps: int, total_steps: int):
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def supervised_finetune(
    model,
    tokenizer,
    examples,
    cfg: WarmStartConfig,
    seed: int,
    plateau_loss: float | None,
    progress: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Next-token cross-entropy on completion tokens only; returns the loss every 50 steps (stopping early
    at `cfg.plateau_check_step` if the loss is still on the stuck plateau). `progress(steps done, loss)` is
    called after every step (rlx.cli.ticker decides when to print)."""
    input_ids, attention_mask, labels = encode_examples(tokenizer, examples)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    input_ids, attention_mask, labels = input_ids.to(device), attention_mask.to(device), labels.to(device)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(cfg.warmup_steps, cfg.steps))
    model.train()
    losses: list[float] = []
    recent: list[float] = []
    for step in range(cfg.steps):
        rows = torch.randint(0, input_ids.shape[0], (cfg.batch_size,), generator=generator).to(device)
        out = model(
            input_ids=input_ids[rows], attention_mask=attention_mask[rows], labels=labels[rows], use_cache=False
        )
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        recent = (recent + [out.loss.item()])[-100:]
        if progress is not None:
            progress(step + 1, recent[-1])
        if step % 50 == 0 or step == cfg.steps - 1:
            losses.append(round(recent[-1], 4))
        if plateau_loss is not None and step == cfg.plateau_check_step and sum(recent) / len(recent) > plateau_loss:
            losses.append(round(sum(recent) / len(recent), 4))
            break
    model.eval()
    return losses
