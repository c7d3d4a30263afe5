"""Load a causal LM and its tokenizer from a local directory: the one path every model goes through.

The embedded tiny model is first written to a directory (see `tiny.py`) and then loaded here exactly like
a user's own model, so `model=hf model.name_or_path=<dir>` exercises the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from rlx.errors import RlxError


class ModelError(RlxError):
    pass


@dataclass
class LoadedModel:
    policy: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    path: Path


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def load_local(path: str | Path, dtype: str = "float32", gradient_checkpointing: bool = False) -> LoadedModel:
    """Load `AutoModelForCausalLM` + `AutoTokenizer` from `path`; no network is ever touched.

    The model's own dropout is switched off (`disable_dropout`). `gradient_checkpointing` recomputes each
    decoder layer's activations in the backward pass instead of storing them (transformers' activation
    checkpointing, non-reentrant): less memory per update for about one more forward pass of compute. It acts
    when the policy updates (train mode, with autograd), not while it samples or scores log-probs.
    """
    path = Path(path).expanduser()
    if (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        raise ModelError(
            f"model.name_or_path={path} is a peft adapter directory, not a model. Point it at the merged model "
            "(an rlx LoRA run writes it to <run>/policy), or at the base model and train a new adapter (peft=lora)"
        )
    if not (path / "config.json").is_file():
        raise ModelError(
            f"model.name_or_path={path} is not a model directory (no config.json). Point it at a directory "
            "written by save_pretrained, e.g. a run's outputs/.../policy"
        )
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise ModelError(
            f"model.name_or_path={path} has no tokenizer (none of {list(TOKENIZER_FILES)}). Save one next to "
            "the weights with tokenizer.save_pretrained(path)"
        )
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tokenizer.padding_side = "left"  # completions must all start at the same column
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ModelError(f"the tokenizer in {path} has neither a pad nor an eos token; add one")
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.eos_token_id is None:
        raise ModelError(f"the tokenizer in {path} has no eos token: completions could never end")
    try:
        torch_dtype = getattr(torch, dtype)
    except AttributeError:
        raise ModelError(f"model.dtype={dtype!r} is not a torch dtype (use float32, bfloat16 or float16)") from None
    policy = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, local_files_only=True)
    policy.generation_config.pad_token_id = tokenizer.pad_token_id
    disable_dropout(policy)
    if gradient_checkpointing:
        if not policy.supports_gradient_checkpointing:
            raise ModelError(f"model.gradient_checkpointing=true, but {type(policy).__name__} does not support it; "
                             "set model.gradient_checkpointing=false")
        policy.activation_checkpointing_enable()
    return LoadedModel(policy=policy, tokenizer=tokenizer, path=path)


def disable_dropout(model: nn.Module) -> None:
    """Every dropout of the model off (TRL's `disable_dropout`, verl's default), so the policy's update can run
    in train mode (which gradient checkpointing and LoRA's adapter dropout need) while its log-probs stay
    those of the sampling policy: the importance ratio is exactly 1 before the first update. Covers dropout
    modules and the attention-probability dropout that attention modules read as a float attribute; the
    config (what save_pretrained exports) is left as it was."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0


class LocalModel:
    """`model=hf`: any local `AutoModelForCausalLM` directory (a GPU user's real model)."""

    def __init__(self, name_or_path: str, dtype: str, gradient_checkpointing: bool) -> None:
        self.name_or_path = name_or_path
        self.dtype = dtype
        self.gradient_checkpointing = gradient_checkpointing

    def __call__(self, task) -> LoadedModel:  # the task is not needed: the model is already trained
        return load_local(self.name_or_path, self.dtype, self.gradient_checkpointing)
