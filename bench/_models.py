"""The models the performance benchmarks share: the embedded default's warm-started tiny model and a larger
random-init Qwen2 with a trained 32k byte-level BPE tokenizer (rlx.models.synthetic), built once and cached
under ~/.cache/rlx/bench (RLX_CACHE moves it) by a hash of its shape."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# >= 20M parameters: hidden 384, 6 layers, 6 heads, 32k vocabulary (tied) = 26.5M; a small Qwen2's proportions
LARGE = {"arch": "qwen2", "hidden": 384, "layers": 6, "heads": 6, "vocab": 32000}


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=overrides)


def tiny_model_dir() -> Path:
    """The default recipe's warm-started model (the embedded default's cached SFT checkpoint)."""
    from hydra.utils import instantiate

    cfg = compose(["run_dir=/tmp/rlx-bench"])
    return instantiate(cfg.model)(instantiate(cfg.data)).path


def synthetic_model_dir(shape: dict) -> Path:
    """A random-init model of `shape` (rlx.models.synthetic.build_model_dir arguments), built once."""
    from rlx.models.synthetic import build_model_dir

    key = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:12]
    root = Path(os.environ.get("RLX_CACHE", "~/.cache/rlx")).expanduser() / "bench"
    target = root / f"{shape['arch']}-h{shape['hidden']}-l{shape['layers']}-{key}"
    if not (target / "config.json").is_file():
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".building-"))
        build_model_dir(tmp, **shape)
        try:
            os.rename(tmp, target)
        except OSError:  # another process built the same shape first
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_dir(size: str) -> Path:
    return tiny_model_dir() if size == "tiny" else synthetic_model_dir(LARGE)


def parameters(path: Path) -> int:
    """Parameters used in matmuls per token: all of them (the synthetic and tiny models tie their embeddings,
    so the input embedding is the LM head)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path)
    import torch

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    if not config.tie_word_embeddings:
        total -= model.get_input_embeddings().weight.numel()
    return total


def matmul_gflops(size: int = 1024, repeats: int = 10) -> float:
    """This machine's float32 matmul rate at the current torch thread count (median of `repeats`)."""
    import statistics
    import time

    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times) / 1e9
