"""KL(π_final ‖ π_start) of a finished run, measured after the fact the same way for every run, so a β = 0
run (which loads no reference and logs no loss/kl) can be compared with a β > 0 one.

    KL(π ‖ π_ref) = E_{y ~ π(·|x)} [ Σ_t log π(y_t | x, y<t) − log π_ref(y_t | x, y<t) ]

estimated on completions sampled from the final policy (temperature as trained, a fixed seed) for held-out
prompts: the sequence-level k1 estimator, unbiased, in nats per completion.
"""

from __future__ import annotations

import json
from pathlib import Path


def kl_to_start(run_dir: str | Path, prompts: int = 256, seed: int = 0) -> float | None:
    """Mean per-completion KL of the run's final policy (`<run>/policy`) to the model it started from
    (footprint.json's start_model) on its first `prompts` held-out prompts. None when either is missing."""
    # deferred: torch, transformers and the model stack load only when a KL is measured
    import torch
    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from transformers.utils import logging as hf_logging

    from rlx.forward.logprobs import sequence_logprobs
    from rlx.models.loading import load_local
    from rlx.rollout.generate import generate

    run_dir = Path(run_dir)
    footprint = run_dir / "footprint.json"
    start = json.loads(footprint.read_text()).get("start_model") if footprint.is_file() else None
    if not start or not (Path(start) / "config.json").is_file() or not (run_dir / "policy" / "config.json").is_file():
        return None
    hf_logging.disable_progress_bar()  # two 4 MB models load here: no "Loading weights" bars in the report
    cfg = OmegaConf.load(run_dir / "config.yaml")
    task = instantiate(cfg.data, _convert_="all")
    policy, reference = load_local(run_dir / "policy"), load_local(Path(start))
    rows = task.val[:prompts]
    temperature = float(cfg.algo.temperature)
    torch.manual_seed(seed)
    with torch.inference_mode():
        gen = generate(
            policy.policy, policy.tokenizer, [r["prompt"] for r in rows], task.max_new_tokens, temperature, greedy=False
        )
        ids, mask, response_mask = gen.input_ids, gen.attention_mask, gen.response_mask
        width = response_mask.shape[1]
        logp = sequence_logprobs(policy.policy, ids, mask, width, temperature, micro_batch_size=64)  # [N, T]
        ref_logp = sequence_logprobs(reference.policy, ids, mask, width, temperature, micro_batch_size=64)  # [N, T]
        per_sequence = ((logp - ref_logp) * response_mask).sum(-1)  # [N]
    return float(per_sequence.mean())
