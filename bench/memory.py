"""Peak memory of one GRPO step against the batch size, with and without micro-batching, and LoRA's training
state against full fine-tuning's, on a real-shaped model: a 50M-parameter Qwen2 with a 32k-token vocabulary
(`rlx.models.synthetic`, random weights, so every completion runs to the full `--new-tokens`).

    python bench/memory.py                       # prompts 8/16/32/64 x 8 completions, 64 new tokens
    python bench/memory.py --prompts 8,32 --max-rss-gb 12

Each configuration runs in its own subprocess (a fresh interpreter: nothing freed by an earlier one is
counted): it builds the run exactly as `python -m rlx` does (`rlx.train.build`), resets the process's
high-water RSS (Linux `clear_refs`), runs one RL step (generate, score, reference and policy log-probs,
backward, optimiser step; no validation, no checkpoint) and reports the step's peak RSS (`VmHWM`). A child
whose RSS passes `--max-rss-gb` is stopped and reported as above that cap, so the unbounded configurations
cannot take a shared machine down. The peer is the same run with every forward over the whole batch
(micro-batching off), measured in the same invocation; the ratio the issue asks for is the peak at 32 x 8
over the peak at 8 x 8 with micro-batching on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def model_dir(cache: Path, hidden: int, layers: int, vocab: int) -> Path:
    from rlx.models.synthetic import build_model_dir

    path = cache / "bench" / f"qwen2-h{hidden}-l{layers}-v{vocab}"
    if not (path / "synthetic.json").is_file():  # built once (~10 s), then reused; atomic for parallel runs
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=".building-"))
        build_model_dir(tmp / "m", arch="qwen2", hidden=hidden, layers=layers, heads=max(1, hidden // 64),
                        vocab=vocab)
        try:
            os.rename(tmp / "m", path)
        except OSError:
            pass  # another run built it first
    return path


def prompts_file(directory: Path) -> Path:
    """Arithmetic questions as free text (reward=math extracts the last number)."""
    path = directory / "prompts.jsonl"
    rows = [{"prompt": f"Question: what is {a} plus {b}? Answer:", "answer": str(a + b)}
            for a in range(10, 30) for b in range(10, 30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def overrides(model: Path, data: Path, run_dir: Path, prompts: int, group: int, new_tokens: int,
              extra: list[str]) -> list[str]:
    return [f"run_dir={run_dir}", "model=hf", f"model.name_or_path={model}", "data=jsonl",
            f"data.train_file={data}", f"data.val_file={data}", f"data.max_new_tokens={new_tokens}",
            f"algo.prompts_per_step={prompts}", f"algo.group_size={group}", "trainer.max_steps=1",
            "trainer.callbacks=[]", "+trainer.enable_checkpointing=false",
            "logger=csv", *extra]


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def tensor_mb(tensors) -> float:
    seen, total = set(), 0
    for t in tensors:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total / 2**20


def child(args: list[str]) -> dict:
    """One step of one configuration, in this process; prints a JSON line of measurements."""
    import torch
    from hydra import compose, initialize_config_dir

    from rlx.train import build, reset_peak_memory

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=args)
    module, trainer = build(cfg)
    reset_peak_memory()
    start = time.perf_counter()
    trainer.fit(module)
    step_s = time.perf_counter() - start
    policy = module.policy
    optimizer = trainer.optimizers[0]
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
    reference = module.reference
    ref_params: list = []
    if reference is not None:
        policy_ptrs = {p.data_ptr() for p in policy.parameters()}
        if isinstance(reference, torch.nn.Module):
            ref_params = [p for p in reference.parameters() if p.data_ptr() not in policy_ptrs]
        else:
            with reference.forward_model() as ref:
                ref_params = [p for p in ref.parameters() if p.data_ptr() not in policy_ptrs]
    return {
        "peak_rss_mb": round(vm_hwm_mb(), 1),
        "step_s": round(step_s, 1),
        "parameters": sum(p.numel() for p in policy.parameters()),
        "trainable": sum(p.numel() for p in policy.parameters() if p.requires_grad),
        "weights_mb": round(tensor_mb(policy.parameters()), 1),
        "optimizer_state_mb": round(tensor_mb(state), 1),
        "reference_extra_mb": round(tensor_mb(ref_params), 1),
        "completion_tokens": int(trainer.callback_metrics["rollout/length_mean"] * cfg.algo.prompts_per_step
                                 * cfg.algo.group_size) if "rollout/length_mean" in trainer.callback_metrics else None,
    }


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(args: list[str], cap_mb: float, timeout_s: float) -> dict:
    """Run one configuration in a subprocess, stopping it if its RSS passes the cap."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(args)], stdout=out, stderr=err,
                                cwd=REPO, env=env)
        start, highest = time.monotonic(), 0.0
        while proc.poll() is None:
            highest = max(highest, rss_mb(proc.pid))
            if highest > cap_mb or time.monotonic() - start > timeout_s:
                proc.kill()
                proc.wait()
                why = f"> {cap_mb / 1024:.1f} GB (stopped)" if highest > cap_mb else f"timed out after {timeout_s:.0f} s"
                return {"error": why}
            time.sleep(0.05)
        out.seek(0)
        err.seek(0)
        lines = [line for line in out.read().splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            stderr = err.read()
            missing = re.search(r"Could not override '([\w.]+)'", stderr)
            if missing:  # a key another part of the project adds (micro-batching) is not on this branch yet
                return {"error": f"needs {missing.group(1)}, which this checkout lacks"}
            tail = stderr.strip().splitlines()[-3:]
            return {"error": f"exit {proc.returncode}: {' | '.join(tail)[-300:]}"}
        return json.loads(lines[-1])


def cell(result: dict) -> str:
    return f"{result['peak_rss_mb'] / 1024:.2f} GB" if "peak_rss_mb" in result else result["error"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", default="8,16,32,64", help="prompts_per_step values")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--micro-batch", type=int, default=16, help="sequences per forward/backward")
    parser.add_argument("--generation-batch", type=int, default=64, help="sequences per generate call")
    parser.add_argument("--max-rss-gb", type=float, default=12.0, help="stop a configuration above this RSS")
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--skip-unbatched-above", type=int, default=64,
                        help="do not run micro-batching-off at more prompts than this (they only hit the cap)")
    parser.add_argument("--hidden", type=int, default=512, help="the synthetic Qwen2's width (512: 50M parameters)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--cache", default=os.environ.get("RLX_CACHE", "~/.cache/rlx"))
    parser.add_argument("--json", help="also write every measurement here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return

    model = model_dir(Path(args.cache).expanduser(), args.hidden, args.layers, args.vocab)
    meta = json.loads((model / "synthetic.json").read_text())
    cap = args.max_rss_gb * 1024
    bounded = [f"algo.micro_batch_size={args.micro_batch}", f"algo.generation_batch_size={args.generation_batch}"]
    results: dict = {"model": meta, "batch": {}, "lora": {}}
    print(f"model: {meta['arch']} {meta['parameters'] / 1e6:.1f}M parameters, vocabulary {meta['tokens']} tokens; "
          f"{args.new_tokens} new tokens; {args.group_size} completions per prompt; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', '1')}\n")
    with tempfile.TemporaryDirectory() as tmp:
        data = prompts_file(Path(tmp))

        def run(name: str, prompts: int, extra: list[str]) -> dict:
            run_dir = Path(tmp) / f"{name}-{prompts}"
            out = measure(overrides(model, data, run_dir, prompts, args.group_size, args.new_tokens, extra), cap,
                          args.timeout_s)
            print(f"  {name:>10} {prompts:>3} x {args.group_size}: {cell(out)}", flush=True)
            return out

        for prompts in [int(p) for p in args.prompts.split(",")]:
            row = {"micro-batched": run("bounded", prompts, bounded)}
            row["whole batch"] = (run("whole", prompts, []) if prompts <= args.skip_unbatched_above
                                  else {"error": "not run"})
            results["batch"][prompts] = row
        lora_prompts = int(args.prompts.split(",")[0])
        results["lora"]["full"] = results["batch"][lora_prompts]["micro-batched"]  # the same run: peft=none
        results["lora"]["lora"] = run("lora", lora_prompts, [*bounded, "peft=lora"])

    print(f"\n| prompts x completions | completions | micro-batched (micro_batch_size={args.micro_batch}, "
          f"generation_batch_size={args.generation_batch}) | whole batch per forward |")
    print("|---|---|---|---|")
    for prompts, row in results["batch"].items():
        print(f"| {prompts} x {args.group_size} | {prompts * args.group_size} | {cell(row['micro-batched'])} | "
              f"{cell(row['whole batch'])} |")
    base = results["batch"].get(8, {}).get("micro-batched", {})
    at32 = results["batch"].get(32, {}).get("micro-batched", {})
    if "peak_rss_mb" in base and "peak_rss_mb" in at32:
        ratio = at32["peak_rss_mb"] / base["peak_rss_mb"]
        results["ratio_32_over_8"] = round(ratio, 3)
        print(f"\nmicro-batched peak at 32 x {args.group_size} / at 8 x {args.group_size}: {ratio:.2f}x "
              f"(target <= 1.3x)")
    print(f"\nTraining state at {lora_prompts} x {args.group_size}, micro-batched:\n")
    print("| peft | trainable parameters | weights | optimiser state | reference beyond the policy | peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, out in results["lora"].items():
        if "peak_rss_mb" not in out:
            print(f"| {name} | {out['error']} | | | | |")
            continue
        print(f"| {name} | {out['trainable'] / 1e6:.2f}M of {out['parameters'] / 1e6:.1f}M | {out['weights_mb']:.0f} MB "
              f"| {out['optimizer_state_mb']:.1f} MB | {out['reference_extra_mb']:.0f} MB | {cell(out)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
