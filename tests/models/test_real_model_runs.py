"""End to end through rlx.train: LoRA on the embedded default learns, checkpoints its adapters with their
optimiser state, resumes, and exports an adapter and a merged model; PPO's critic runs beside a LoRA policy;
conversational JSONL trains through model=hf with gradient checkpointing and bf16-mixed; a tokenizer
without a chat template, or the character-level tiny model, fails at start."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlx.errors import ConfigError
from rlx.models.loading import ModelError
from rlx.rewards.base import Status
from rlx.rewards.math import MathReward
from rlx.rollout.generate import generate
from rlx.train import build, train
from tests.conftest import FAST_MODEL, compose_config

# A warm start near the imitation ceiling (held-out ~0.58) at about half the default's cost: 800 SFT steps
# from the retry initialisation scale (0.08), which never sticks on the plateau.
LORA_WARM_START = ["model.warm_start.steps=800", "model.init_std=0.08", "model.warm_start.max_attempts=1"]
CHAT = [
    {"prompt": [{"role": "user", "content": f"What is {a}+{b}?"}], "answer": str(a + b)}
    for a in range(4)
    for b in range(4)
]


def chat_jsonl(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in CHAT))
    return ["data=jsonl", f"data.train_file={path}", f"data.val_file={path}", "data.max_new_tokens=8"]


def greedy_accuracy(model, tokenizer, rows, max_new_tokens) -> float:
    texts = generate(model, tokenizer, [r["prompt"] for r in rows], max_new_tokens, 1.0, greedy=True).texts
    reward = MathReward(strict=True, verifier="exact", format_weight=0.0, timeout_s=5)
    return sum(v.status == Status.PASS for v in reward(texts, rows)) / len(rows)


# heavy (outside CI's 30-minute budget; plain `pytest` runs it): a 30-step learning run; LoRA learns in CI in the
# vLLM job (tests/rollout/test_vllm_e2e.py)
@pytest.mark.heavy
@pytest.mark.slow
def test_lora_on_the_embedded_default_gains_checkpoints_resumes_and_exports(tmp_path, test_cache):
    args = [
        "peft=lora",
        *LORA_WARM_START,
        f"model.cache_dir={test_cache}",
        "data.val_size=200",
        "trainer.max_steps=30",
        "trainer.val_check_interval=100",
        "checkpoint.every_n_steps=30",
    ]
    summary = train(compose_config(args, tmp_path / "run"))
    before, after = summary["before"]["val/accuracy"], summary["after"]["val/accuracy"]
    assert after - before >= 0.15, (before, after)

    # the merged export loads without peft and decodes exactly as the trained policy did
    merged = AutoModelForCausalLM.from_pretrained(summary["policy_dir"])
    tokenizer = AutoTokenizer.from_pretrained(summary["policy_dir"])
    assert not any("lora" in name for name, _ in merged.named_parameters())
    module, _ = build(compose_config(args, tmp_path / "again"))  # the same held-out rows
    assert greedy_accuracy(merged, tokenizer, module.task.val, module.task.max_new_tokens) == pytest.approx(after)
    adapter = json.loads((tmp_path / "run" / "adapter" / "adapter_config.json").read_text())
    assert adapter["r"] == 16 and adapter["peft_type"] == "LORA"

    # the checkpoint holds the adapters and their (and only their) optimiser state
    ckpt = torch.load(summary["checkpoint"], weights_only=False)
    lora_keys = [k for k in ckpt["state_dict"] if "lora_" in k]
    assert lora_keys
    state = ckpt["optimizer_states"][0]["state"]
    assert len(state) == len(lora_keys) and all(s["exp_avg"].abs().sum() > 0 for s in state.values())
    resumed = train(
        compose_config([*args, "trainer.max_steps=31", f"ckpt_path={summary['checkpoint']}"], tmp_path / "resumed")
    )
    assert resumed["steps"] == 31 and resumed["before"] == summary["before"]


@pytest.mark.slow
def test_ppo_critic_beside_a_lora_policy_with_checkpointing_and_bf16_on_tiny(tmp_path, test_cache):
    summary = train(
        compose_config(
            [
                "algo=ppo",
                "peft=lora",
                *FAST_MODEL,
                f"model.cache_dir={test_cache}",
                "model.gradient_checkpointing=true",
                "trainer.precision=bf16-mixed",
                "algo.prompts_per_step=8",
                "data.val_size=16",
                "trainer.max_steps=2",
            ],
            tmp_path / "ppo",
        )
    )
    assert summary["steps"] == 2 and "loss/value" in summary["train"]
    assert (tmp_path / "ppo" / "adapter" / "adapter_config.json").is_file()
    assert AutoModelForCausalLM.from_pretrained(summary["policy_dir"]).num_parameters() > 0


@pytest.mark.slow
@pytest.mark.parametrize("peft", ["none", "lora"])
def test_chat_jsonl_trains_through_model_hf_with_checkpointing_and_bf16(tmp_path, chat_model_dir, peft):
    args = [
        "model=hf",
        f"model.name_or_path={chat_model_dir}",
        *chat_jsonl(tmp_path),
        f"peft={peft}",
        "model.gradient_checkpointing=true",
        "trainer.precision=bf16-mixed",
        "algo.prompts_per_step=4",
        "algo.group_size=2",
        "trainer.max_steps=2",
        "samples_every=1",
    ]
    summary = train(compose_config(args, tmp_path / "run"))
    assert summary["steps"] == 2
    assert all(torch.isfinite(torch.tensor(v)) for k, v in summary["train"].items() if k.startswith("loss/"))
    sample = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    assert sample["prompt"].startswith("<|im_start|>user\nWhat is ") and sample["prompt"].endswith(
        "<|im_start|>assistant\n"
    )
    exported = AutoModelForCausalLM.from_pretrained(summary["policy_dir"])
    assert type(exported).__name__ == "Qwen2ForCausalLM"
    assert AutoTokenizer.from_pretrained(summary["policy_dir"]).chat_template  # the template travels with it


def test_conversations_need_a_chat_template(tmp_path, base_model_dir, cfg_factory):
    with pytest.raises(ConfigError, match=r"prompts are conversations .*chat.jsonl:1.*has no chat template"):
        build(cfg_factory("model=hf", f"model.name_or_path={base_model_dir}", *chat_jsonl(tmp_path)))
    with pytest.raises(ModelError, match="model=tiny's character tokenizer has no chat template"):
        build(cfg_factory(*chat_jsonl(tmp_path)))  # before any warm start is trained


@pytest.mark.slow
def test_gradient_checkpointing_acts_in_the_update(tmp_path, chat_model_dir, cfg_factory):
    """The update must run the policy in train mode (transformers checkpoints a layer only then): a config
    key that silently did nothing would be a defect."""
    module, trainer = build(
        cfg_factory(
            "model=hf",
            f"model.name_or_path={chat_model_dir}",
            *chat_jsonl(tmp_path),
            "model.gradient_checkpointing=true",
            "algo.prompts_per_step=2",
            "algo.group_size=2",
            "trainer.max_steps=1",
            "trainer.callbacks=[]",
            "+trainer.enable_checkpointing=false",
        )
    )
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in module.policy.modules() if isinstance(m, GradientCheckpointingLayer)]
    assert layers and all(layer.gradient_checkpointing for layer in layers)
    calls = []
    for layer in layers:
        inner = layer._gradient_checkpointing_func
        layer._gradient_checkpointing_func = lambda *a, _inner=inner, **k: calls.append(1) or _inner(*a, **k)
    trainer.fit(module)
    assert len(calls) >= len(layers)  # each decoder layer's forward in the policy update was checkpointed
