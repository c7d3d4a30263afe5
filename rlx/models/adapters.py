"""The `peft` config group: what of the policy is trained, what the reference is, and what the export writes.

`peft=none` trains every weight; the reference is a frozen deep copy of the starting policy, and the export
is the policy's `save_pretrained` directory.

`peft=lora` (Hu et al. 2021, arXiv 2106.09685) wraps the policy with peft's LoRA adapters: only the low-rank
matrices train (the optimiser holds state for them alone), and the reference is the same network with the
adapters disabled (`PeftModel.disable_adapter()`, as TRL's GRPOTrainer does for a freshly created adapter),
so the starting weights are held once. That is exact because a new adapter starts at B = 0: with adapters
off, the network is the starting policy. The export writes the adapter directory and a merged model that
`AutoModelForCausalLM.from_pretrained` loads without peft.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rlx.errors import ConfigError
from rlx.models.reference import AdapterReference, FrozenReference

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)


def plain_copy(policy) -> PreTrainedModel:
    """A deep copy of the policy as a plain transformers model (PPO's critic starts from its body): a LoRA
    policy's adapters are merged into the copy's weights and removed."""
    # deferred (start-up time): peft loads only when model.peft is set
    from peft import PeftModel

    copied = copy.deepcopy(policy)
    return copied.merge_and_unload() if isinstance(copied, PeftModel) else copied


def check_strategy(peft, trainer) -> None:
    """LoRA is refused under a sharded strategy at start: the adapter-disabled reference and the merged export
    are written for whole (replicated) weights, and have not been run on FSDP's shards."""
    # deferred: rlx.distributed.fsdp imports Lightning; only this check needs it
    from rlx.distributed.fsdp import FullyShardedDataParallel

    if isinstance(peft, Lora) and isinstance(trainer.strategy, FullyShardedDataParallel):
        raise ConfigError(
            "peft=lora runs under trainer=ddp or on one process, not under trainer=fsdp (the adapters "
            "are small: replicate them with trainer=ddp, or use peft=none with trainer=fsdp)"
        )


class FullFineTuning:
    """`peft=none`: every weight of the policy trains."""

    def wrap(self, policy):
        return policy

    def reference(self, policy) -> FrozenReference:
        return FrozenReference(copy.deepcopy(policy))  # the frozen starting (SFT) policy

    def export(self, world, policy, tokenizer, run_dir: Path) -> dict[str, str]:
        """`policy/` by rank 0 (gathered first under trainer=fsdp)."""
        # deferred: rlx.distributed resolves save_policy lazily (rlx/distributed/__init__.py); only saving needs it
        from rlx.distributed import save_policy

        save_policy(world, policy, tokenizer, run_dir / "policy")
        return {"policy_dir": str(run_dir / "policy")}


class Lora:
    """`peft=lora`: low-rank adapters on `target_modules` (peft's names, or "all-linear": every linear layer
    except the output head), scaled by alpha / r, with dropout on the adapter's input while updating."""

    def __init__(self, r: int, alpha: float, dropout: float, target_modules: str | list[str]) -> None:
        if r < 1:
            raise ValueError(f"peft.r must be >= 1 (got {r})")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"peft.dropout must be in [0, 1) (got {dropout})")
        if not target_modules:
            raise ValueError(
                "peft.target_modules is empty: name the layers to adapt, e.g. all-linear or [q_proj,v_proj]"
            )
        self.r, self.alpha, self.dropout, self.target_modules = r, alpha, dropout, target_modules

    def wrap(self, policy):
        # deferred (start-up time): peft loads only when model.peft is set
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=self.target_modules,
            task_type="CAUSAL_LM",
        )
        try:
            wrapped = get_peft_model(policy, config)
        except ValueError as err:  # e.g. a target module the architecture does not have
            # deferred: rlx.models.loading imports transformers; only this error path needs it
            from rlx.models.loading import ModelError

            raise ModelError(
                f"peft.target_modules={self.target_modules!r} does not fit {type(policy).__name__}: {err}"
            ) from None
        trainable = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
        total = sum(p.numel() for p in wrapped.parameters())
        log.info(
            "LoRA r=%d on %s: %d of %d parameters train (%.2f%%)",
            self.r,
            self.target_modules,
            trainable,
            total,
            100 * trainable / total,
        )
        return wrapped

    def reference(self, policy) -> AdapterReference:
        return AdapterReference(policy)

    def export(self, world, policy, tokenizer, run_dir: Path) -> dict[str, str]:
        """By rank 0 (every rank holds the same adapters under trainer=ddp): `adapter/` (peft's
        adapter_config.json + weights) and `policy/`: the base model reloaded from its own directory on the CPU
        with the saved adapter merged in, so the adapter directory is proven to load and the merged export costs
        no accelerator memory."""
        # deferred (start-up time): peft and transformers load only to rebuild a saved adapter's model
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        adapter_dir, policy_dir = run_dir / "adapter", run_dir / "policy"
        paths = {"policy_dir": str(policy_dir), "adapter_dir": str(adapter_dir)}
        if not world.is_zero:
            return paths
        policy.save_pretrained(adapter_dir)
        tokenizer.save_pretrained(adapter_dir)
        base_path = policy.peft_config["default"].base_model_name_or_path
        dtype = policy.get_base_model().dtype
        base = AutoModelForCausalLM.from_pretrained(base_path, dtype=dtype, local_files_only=True, device_map="cpu")
        with torch.no_grad():
            merged = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
        merged.generation_config.pad_token_id = tokenizer.pad_token_id
        merged.save_pretrained(policy_dir)
        tokenizer.save_pretrained(policy_dir)
        return paths
