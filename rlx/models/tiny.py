"""model=tiny: the embedded default, a ~1M-parameter Llama built from a config (no download), warm-started
by a short SFT on the task's teacher corpus, written to a cache directory and loaded back through
`load_local` — the same code path as a user's own model.

The cache key is a hash of everything that determines the weights (architecture, warm-start recipe and
seed, the task's corpus fingerprint, this file's format version): a second run, or every job of a sweep
that shares them, reuses the checkpoint instead of redoing the SFT.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlx.cli import status
from rlx.cli.files import guarded
from rlx.cli.lock import HeldLock, describe_holder
from rlx.cli.ticker import Ticker
from rlx.models.loading import LoadedModel, ModelError, load_local
from rlx.models.tokenizer import build_char_tokenizer
from rlx.models.warm_start import WarmStartConfig, encode_examples, supervised_finetune
from rlx.seeding import isolated_rng

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
# Torch threads for this model's work when neither model.threads nor OMP_NUM_THREADS says: one. Measured with
# bench/threads.py (bench/RESULTS-threads.md): on the 2-core machine a warm-start step takes 0.12 s on one thread
# and 0.31 s on two even with nothing else running (a 1M-parameter model's matmuls are too small to split), and
# beside one CPU-bound process 0.16 s against 1.54 s (two threads then wait on each other: 10x).
TINY_THREADS = 1


def choose_threads(requested: int | None) -> None:
    """Set torch's intra-op threads for the embedded default: `model.threads` if set, else OMP_NUM_THREADS's
    own choice if the user exported it, else TINY_THREADS."""
    if requested is not None:
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise ModelError(f"model.threads is a thread count >= 1 or null (got {requested!r}): e.g. model.threads=2")
        torch.set_num_threads(requested)
    elif os.environ.get("OMP_NUM_THREADS"):
        return  # torch already follows it
    else:
        torch.set_num_threads(TINY_THREADS)
    log.info(
        "torch threads: %d (model.threads=N or OMP_NUM_THREADS=N to change; bench/threads.py measures them)",
        torch.get_num_threads(),
    )


def build_tiny_llama(
    tokenizer,
    hidden_size: int,
    layers: int,
    heads: int,
    intermediate_size: int,
    max_positions: int,
    init_std: float,
    seed: int,
) -> LlamaForCausalLM:
    """Llama, not Qwen2: transformers' auto tokenizer for a Qwen2 config silently drops spaces from a
    small vocabulary (see shared/ENV.md); Llama round-trips the char tokenizer exactly."""
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        initializer_range=init_std,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def greedy_match_rate(model, tokenizer, examples: list[tuple[str, str]], max_new_tokens: int, chunk: int = 32) -> float:
    """The share of (prompt, completion) examples whose greedy decoding (at most `max_new_tokens`) is exactly
    the completion, from one teacher-forced forward pass per chunk of examples instead of a decode.

    Greedy decoding writes completion c [T tokens] iff, fed the prompt and c's first i tokens, the model's
    argmax is c's token i for every i < T, and then eos (unless T = max_new_tokens: decoding stops there
    anyway); with T > max_new_tokens it cannot. One forward pass over prompt + c + eos yields every one of
    those argmaxes, where decoding takes up to max_new_tokens steps (a barely trained model runs every row to
    the cap: 520 steps on data=kernels). The two agree up to float rounding between a full forward pass and
    cached decoding (tests/models/test_greedy_match.py compares them)."""
    input_ids, attention_mask, labels = encode_examples(tokenizer, examples)  # [N, L] each; labels: c + eos
    # a text the tokenizer cannot round-trip (an unknown character) never comes back out of decoding
    exact = torch.tensor([tokenizer.decode(tokenizer.encode(c, add_special_tokens=False)) == c for _, c in examples])
    device = next(model.parameters()).device
    matched = 0
    for start in range(0, len(examples), chunk):
        rows = slice(start, start + chunk)
        with torch.no_grad():
            logits = model(input_ids=input_ids[rows].to(device), attention_mask=attention_mask[rows].to(device)).logits
        predicted = logits[:, :-1].argmax(-1).cpu()  # [n, L - 1]: the greedy token after each position
        target = labels[rows, 1:]  # [n, L - 1]: c's tokens, then eos, -100 elsewhere
        scored = target != -100
        required = scored & (scored.cumsum(-1) <= max_new_tokens)  # the tokens decoding would emit
        fits = scored.sum(-1) - 1 <= max_new_tokens  # T <= max_new_tokens
        ok = ((predicted == target) | ~required).all(-1) & fits & exact[rows]
        matched += int(ok.sum())
    return matched / len(examples)


class TinyModel:
    """Build (or fetch from the cache) the warm-started tiny model for a task, then load it like any other."""

    def __init__(
        self,
        hidden_size: int,
        layers: int,
        heads: int,
        intermediate_size: int,
        max_positions: int,
        init_std: float,
        warm_start: WarmStartConfig | None,
        cache_dir: str,
        dtype: str,
        gradient_checkpointing: bool,
        threads: int | None = None,
    ) -> None:
        self.threads = threads
        self.arch = dict(
            hidden_size=hidden_size,
            layers=layers,
            heads=heads,
            intermediate_size=intermediate_size,
            max_positions=max_positions,
            init_std=init_std,
        )
        self.warm_start = warm_start
        self.cache_dir = Path(cache_dir).expanduser()
        self.dtype = dtype
        self.gradient_checkpointing = gradient_checkpointing

    def cache_key(self, task) -> str:
        ws = None if self.warm_start is None else vars(self.warm_start)
        checks = [task.warm_start_min_match, task.warm_start_plateau_loss] if ws else None
        blob = json.dumps(
            {
                "v": FORMAT_VERSION,
                "arch": self.arch,
                "warm_start": ws,
                "task": task.fingerprint() if ws else None,
                "checks": checks,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def __call__(self, task) -> LoadedModel:
        if task.conversational:  # fail before the warm start, not after it
            raise ModelError(
                "the data's prompts are conversations (lists of messages), but model=tiny's character "
                "tokenizer has no chat template. Use model=hf with a chat model, or plain-text prompts"
            )
        choose_threads(self.threads)
        target = self.cache_dir / "tiny" / self.cache_key(task)
        target.parent.mkdir(parents=True, exist_ok=True)
        # One process trains a recipe's warm start; the sweep's other jobs that need it wait for it here and then
        # reuse it, instead of each training the same model (an flock is released if its holder dies).
        lock = HeldLock(target.parent / f".{target.name}.lock")
        try:
            if not (target / "config.json").is_file():
                wait_for(lock, target)
            if (target / "config.json").is_file():
                log.info("warm start: reusing %s", target)
            else:
                status.enter(status.WARM_START)
                with isolated_rng():  # the SFT's draws never reach the caller's RNGs (the RL phase: rlx.seeding)
                    self.build(task, target, lock)
        finally:
            lock.release()
        status.enter("loading the model")
        return load_local(target, self.dtype, self.gradient_checkpointing)

    def build(self, task, target: Path, lock: HeldLock) -> None:
        tokenizer = build_char_tokenizer()
        report: dict = {"arch": self.arch, "attempts": []}
        model = None
        ws = self.warm_start
        attempts = 1 if ws is None else ws.max_attempts
        for attempt in range(attempts):
            # A stuck initialisation is retried with a new seed and the retry init scale.
            init_std = self.arch["init_std"] if attempt == 0 or ws is None else ws.retry_init_std
            arch: dict[str, Any] = {**self.arch, "init_std": init_std}
            model = build_tiny_llama(tokenizer, **arch, seed=(ws.seed if ws else 0) + 1000 * attempt)
            if ws is None:
                break
            start = time.perf_counter()
            log.info(
                "warm start attempt %d: %d SFT steps of batch %d on %d teacher examples (model.warm_start)",
                attempt + 1,
                ws.steps,
                ws.batch_size,
                ws.corpus_size,
            )
            examples = task.warm_start_examples(ws.corpus_size, ws.seed)
            ticker = Ticker(f"warm start attempt {attempt + 1}", ws.steps, on_line=lock.describe_progress)
            losses = supervised_finetune(
                model,
                tokenizer,
                examples,
                ws,
                seed=ws.seed + attempt,
                plateau_loss=task.warm_start_plateau_loss,
                progress=ticker.update_loss,
            )
            ticker.close()
            match = greedy_match_rate(model, tokenizer, examples[:256], task.max_new_tokens)
            report["attempts"].append(
                {
                    "init_std": init_std,
                    "losses": losses,
                    "greedy_match": match,
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            log.info(
                "warm start attempt %d: final loss %.3f, greedy match with the teacher %.2f (%.0f s)",
                attempt + 1,
                losses[-1],
                match,
                time.perf_counter() - start,
            )
            if match >= task.warm_start_min_match:
                break
            log.warning(
                "warm start looks stuck (greedy match %.2f < data.warm_start_min_match=%.2f); "
                "retrying with a new initialisation",
                match,
                task.warm_start_min_match,
            )
        else:
            raise RuntimeError(
                f"warm start stuck after {attempts} attempts: {report['attempts']}. Raise "
                "model.warm_start.steps or lower data.warm_start_min_match"
            )
        # Write to a temporary sibling and rename: parallel sweep jobs never see a half-written model.
        target.parent.mkdir(parents=True, exist_ok=True)
        # A stop (SIGTERM, an error) before the rename discards the copy: the cache never holds half a model.
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
        # a signal waits for the copy and its rename; a full disk removes the copy and says so in one line
        fix = "free space there, or set model.cache_dir (or RLX_CACHE) to a directory on a disk with room"
        with guarded(target, "the warm-started model", fix, partial=tmp):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / "warm_start.json").write_text(json.dumps(report, indent=1))
            try:
                os.rename(tmp, target)
            except OSError:  # another job finished the same build first; its copy is identical in recipe
                shutil.rmtree(tmp, ignore_errors=True)


def wait_for(lock: HeldLock, target: Path, every_s: float = 10.0) -> None:
    """Take the warm-start lock; while another process holds it, say every `every_s` seconds who it is, since
    when and how far its warm start has got (what it last wrote into the lock file)."""
    if lock.acquire():
        return
    log.info("warm start: %s is training %s; waiting for it", describe_holder(lock.holder()), target.name)
    last = time.monotonic()
    while not lock.acquire():
        time.sleep(0.5)
        if time.monotonic() - last >= every_s:
            last = time.monotonic()
            holder = lock.holder()
            log.info("warm start: waiting for %s: %s", describe_holder(holder), holder.get("line", "no progress yet"))
