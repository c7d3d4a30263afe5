"""Every phase of an rlx step against this machine's limit, in one run: the float32 matmul rate measured at the
model's own GEMM shapes, then for each phase (generate, reference forward, old-log-prob forward where one runs,
update forward + backward + optimiser) the FLOPs done, the FLOPs that were useful (bench/_flops.py: no padding,
prompts once, heads only where read), the achieved rate on useful FLOPs and the share of the bound (the time the
useful matmuls would take at the measured rates ÷ the phase's time). A phase under --profile-below of its bound
is profiled (torch.profiler, its last call replayed) and its time split by op category: what stops it, measured.

With --packing, the same step with algo.pack_sequences=true and =false side by side (alternating runs), on the
26.5M model with completions cut to uneven lengths (--uneven: each completion without eos cut at a length drawn
uniformly from 1..max_new_tokens after it is sampled, as if it had ended there; generation is the same in both
arms, the forwards and the update see the uneven batch).

Sizes (bench/_models.py): `tiny`, the default run (the embedded warm-started 1M Llama, 16 prompts × 8, ≤ 4 new
tokens, the default config); `large`, the random-init 26.5M Qwen2, 8 prompts × 8, 64 new tokens, micro-batches of
16 sequences, the default config otherwise (bench/grpo_step.py's large setting). Every run is its own process.

    OMP_NUM_THREADS=1 python bench/limit.py                       # both sizes, profiles, packing on vs off
    OMP_NUM_THREADS=1 python bench/limit.py --sizes large --steps 2 --new-tokens 8 --packing-rounds 1  # dry run
    OMP_NUM_THREADS=1 python bench/limit.py --label multi-turn --overrides env=tool_math   # another config

The FLOP counting replays each phase once under torch's FlopCounterMode (generation with the same random state,
the update on the same batch with an optimiser that applies nothing); the replays are left out of every time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flops import (
    Work,
    bound_seconds,
    counted_flops,
    forward_work,
    generate_work,
    median,
    model_shape,
    profile_breakdown,
)
from _models import REPO, compose, model_dir

SIZES = {  # prompts, G, new tokens, micro-batch (None: the default config's), steps, warm-up steps left out
    "tiny": {"prompts": 16, "group": 8, "new_tokens": None, "micro": None, "steps": 20, "warmup": 3},
    "large": {"prompts": 8, "group": 8, "new_tokens": 64, "micro": 16, "steps": 4, "warmup": 1},
}
PHASES = ("generate", "reference", "old log-prob", "update")


class Probe:
    """Times each phase of every step, counts its FLOPs by a replay, and keeps the last call's replay."""

    def __init__(self, module, count: bool, uneven: bool) -> None:
        self.module, self.count, self.uneven = module, count, uneven
        self.records: list[dict] = []  # one per phase call: step, phase, seconds, done, work, rows
        self.replays: dict = {}
        self.replay_seconds = 0.0  # spent counting, inside the steps: taken out of the step times
        self.batch = None
        self.in_reference = False
        self.step = 0

    def record(self, phase: str, seconds: float, run, work: Work, rows: int) -> None:
        start = time.perf_counter()
        done = counted_flops(run) if self.count else None
        self.replay_seconds += time.perf_counter() - start
        self.replays[phase] = run
        self.records.append(
            {"step": self.step, "phase": phase, "seconds": seconds, "done": done, "work": vars(work), "rows": rows}
        )


class EngineProbe:
    """The rollout engine, timed; each sampling call replayed with the same random state to count its FLOPs."""

    def __init__(self, engine, probe: Probe) -> None:
        self.engine, self.probe = engine, probe

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def __call__(self, model, tokenizer, request, on_finished=None):
        import torch

        if request.greedy:  # held-out evaluation, not a training step's phase
            return self.engine(model, tokenizer, request, on_finished)
        state = torch.get_rng_state()
        start = time.perf_counter()
        gen = self.engine(model, tokenizer, request, on_finished)
        seconds = time.perf_counter() - start
        after = torch.get_rng_state()

        def again():  # the same samples: same weights, same random state
            torch.set_rng_state(state)
            self.engine(model, tokenizer, request)
            torch.set_rng_state(after)

        work = generate_work(gen.input_ids, gen.attention_mask, gen.response_mask)
        self.probe.record("generate", seconds, again, work, gen.input_ids.shape[0])  # decode GEMMs: every row
        return cut_uneven(gen, tokenizer, self.probe.step) if self.probe.uneven else gen


def cut_uneven(gen, tokenizer, step: int):
    """Each completion that did not end (no eos) cut after a length drawn uniformly from 1..T, as if it had ended
    there: padding after it, its texts and log-probs cut alike."""
    import dataclasses

    import torch

    from rlx.rollout.generation import decode_texts

    n, width_t = gen.response_mask.shape
    width_p = gen.input_ids.shape[1] - width_t
    lengths = torch.randint(1, width_t + 1, (n,), generator=torch.Generator().manual_seed(1000 + step))
    keep = torch.arange(width_t)[None] < lengths[:, None]  # [N, T]
    keep = keep | ~gen.truncated[:, None]  # completions that ended stay as they are
    response = gen.response_mask * keep
    attention = gen.attention_mask.clone()
    attention[:, width_p:] *= keep
    ids = gen.input_ids.clone()
    ids[:, width_p:][~keep] = tokenizer.pad_token_id
    cut = {f: getattr(gen, f) * keep for f in ("logprobs", "entropy") if getattr(gen, f) is not None}
    texts = decode_texts(tokenizer, ids[:, width_p:], response)
    return dataclasses.replace(gen, input_ids=ids, attention_mask=attention, response_mask=response, texts=texts, **cut)


def install(module, probe: Probe) -> None:
    """Put the probes around the step's phases (the rollout engine, prepare's forwards, the update)."""
    import torch

    import rlx.module
    import rlx.update
    from rlx.forward.logprobs import plan_micro_batches
    from rlx.models.parts import Models
    from rlx.update import NonFiniteGuard, Optimisation

    module.rollout = EngineProbe(module.rollout, probe)
    reference = module.reference
    if reference is not None:
        enter = reference.forward_model

        @contextlib.contextmanager
        def flagged():
            with enter() as model:
                probe.in_reference = True
                try:
                    yield model
                finally:
                    probe.in_reference = False

        reference.forward_model = flagged
    forward = rlx.update.sequence_logprobs

    def probed_forward(model, input_ids, attention_mask, width, temperature, micro, **kwargs):
        phase = "reference" if probe.in_reference else "old log-prob"
        start = time.perf_counter()
        out = forward(model, input_ids, attention_mask, width, temperature, micro, **kwargs)
        seconds = time.perf_counter() - start
        calls = len(plan_micro_batches(attention_mask.sum(-1), micro, kwargs.get("micro_batch_tokens")))
        work = forward_work(input_ids, attention_mask, probe.batch.response_mask)

        def call(m):
            return forward(m, input_ids, attention_mask, width, temperature, micro, **kwargs)

        # the reference's forward replays inside its context (eval, no_grad, LoRA adapters off)
        replay = (lambda: _in(enter, call)) if phase == "reference" else torch.no_grad()(lambda: call(model))
        probe.record(phase, seconds, replay, work, max(1, round(work.tokens / calls)))
        return out

    rlx.update.sequence_logprobs = probed_forward
    prepare = rlx.module.prepare

    def probed_prepare(batch, *args, **kwargs):
        probe.batch = batch
        return prepare(batch, *args, **kwargs)

    rlx.module.prepare = probed_prepare
    update = module.update

    def probed_update(batch):
        start = time.perf_counter()
        out = update(batch)
        seconds = time.perf_counter() - start
        algo, models = module.algo, module.models
        critic = models.critic

        def again():  # the same forwards and backwards, no weight moved
            state = torch.get_rng_state()
            idle = Optimisation(
                Idle(models.policy),
                lambda loss: loss.backward(),
                NonFiniteGuard(10**9),
                Idle(critic) if critic else None,
            )
            rlx.update.update(batch, algo, Models(models.policy, models.reference, critic), idle)
            torch.set_rng_state(state)

        work = forward_work(batch.input_ids, batch.attention_mask, batch.response_mask).scaled(algo.update_epochs)
        per_minibatch = -(-batch.input_ids.shape[0] // algo.minibatches)
        micro = algo.micro_batch_size or per_minibatch
        calls = algo.update_epochs * algo.minibatches * -(-per_minibatch // micro)  # forward + backward calls
        probe.record("update", seconds, again, work, max(1, round(work.tokens / calls)))
        return out

    module.update = probed_update


def _in(enter, fn):
    with enter() as model:
        return fn(model)


class Idle:
    """An optimiser that applies nothing (the FLOP-counting replay of an update)."""

    def __init__(self, model) -> None:
        self.params = list(model.parameters())

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        pass


def run_worker(
    size: str, steps: int, overrides: list[str], new_tokens: int | None, count: bool, uneven: bool, profile_below: float
) -> dict:
    import lightning.pytorch as pl
    import torch

    from rlx.train import build

    spec = SIZES[size]
    model = [] if size == "tiny" else ["model=hf", f"model.name_or_path={model_dir(size)}"]
    tokens = new_tokens or spec["new_tokens"]
    cfg = compose(
        [
            *model,
            f"run_dir={tempfile.mkdtemp(prefix='rlx-limit-')}",
            f"trainer.max_steps={steps}",
            "trainer.val_check_interval=100000",
            "+trainer.enable_checkpointing=false",
            "~trainer.callbacks",
            "trainer.enable_progress_bar=false",
            f"algo.prompts_per_step={spec['prompts']}",
            f"algo.group_size={spec['group']}",
            *([f"data.max_new_tokens={tokens}"] if tokens else []),
            *([f"algo.micro_batch_size={spec['micro']}"] if spec["micro"] else []),
            "samples_every=100000",
            *overrides,
        ]
    )
    module, trainer = build(cfg)
    probe = Probe(module, count, uneven)
    install(module, probe)
    steps_s: list[float] = []

    class Steps(pl.Callback):
        def on_train_batch_start(self, *args):
            probe.step = trainer.global_step
            self.start, self.replayed = time.perf_counter(), probe.replay_seconds

        def on_train_batch_end(self, *args):
            steps_s.append(time.perf_counter() - self.start - (probe.replay_seconds - self.replayed))

    trainer.callbacks.append(Steps())
    trainer.fit(module)
    result = {"size": size, "steps": steps_s, "records": probe.records, "threads": torch.get_num_threads()}
    if count:
        result.update(bounds(module.policy, probe, spec["warmup"], profile_below))
    return result


def bounds(policy, probe: Probe, warmup: int, profile_below: float) -> dict:
    """Each phase's bound time over the measured steps (rates measured now, in this process), and a profile of
    each phase under `profile_below` of its bound."""
    shape = model_shape(policy)
    rates: dict = {}
    phases: dict[str, dict] = {}
    for r in probe.records:
        if r["step"] < warmup:
            continue
        backward = r["phase"] == "update"
        work = Work(**r["work"])
        seconds, _ = bound_seconds(shape, work, r["rows"], backward, rates)
        p = phases.setdefault(r["phase"], {"seconds": 0.0, "done": 0.0, "useful": 0.0, "bound": 0.0, "steps": []})
        p["seconds"] += r["seconds"]
        p["done"] += r["done"]
        p["useful"] += work.flops(shape) * (3 if backward else 1)
        p["bound"] += seconds
        p["steps"] = sorted({*p["steps"], r["step"]})
    profiles = {}
    for name, p in phases.items():
        if p["bound"] / p["seconds"] < profile_below:
            profiles[name] = profile_breakdown(probe.replays[name])
    return {
        "phases": phases,
        "rates": [[*key, rate] for key, rate in sorted(rates.items())],
        "profiles": profiles,
        "shape": vars(shape),
    }


def worker(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise RuntimeError(f"worker {args} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_limit(result: dict, label: str) -> None:
    steps = result["steps"][SIZES[result["size"]]["warmup"] :]
    print(
        f"\n### {label}: {result['size']} model, median step {median(steps):.3f} s ({len(steps)} steps, "
        f"{result['threads']} thread(s))\n"
    )
    rates = {}
    for rows, inner, outer, form, rate in result["rates"]:
        rates.setdefault((inner, outer), []).append(f"{form} M={rows}: {rate / 1e9:.1f}")
    print("Matmul rate at the model's GEMM shapes (float32, GFLOP/s; M = rows per call):\n")
    for (inner, outer), values in rates.items():
        print(f"- {inner} → {outer}: " + ", ".join(values))
    print("\n| phase | s / step | GFLOP done | GFLOP useful | useful / done | useful GFLOP/s | bound GFLOP/s | share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in PHASES:
        p = result["phases"].get(name)
        if p is None:
            print(f"| {name} | (does not run) | | | | | | |")
            continue
        per = len(p["steps"]) * 1e9  # per step, in G
        print(
            f"| {name} | {p['seconds'] / per * 1e9:.3f} | {p['done'] / per:.2f} | {p['useful'] / per:.2f} | "
            f"{p['useful'] / p['done']:.0%} | {p['useful'] / p['seconds'] / 1e9:.1f} | "
            f"{p['useful'] / p['bound'] / 1e9:.1f} | {p['bound'] / p['seconds']:.0%} |"
        )
    for name, prof in result["profiles"].items():
        total = sum(prof["categories"].values())
        parts = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(prof["categories"].items(), key=lambda kv: -kv[1]))
        print(
            f"\n{name} (under the profile threshold), its last call replayed under torch.profiler "
            f"({prof['wall']:.3f} s): {parts}"
        )
        print("  costliest ops (self CPU s): " + ", ".join(f"{op} {s:.3f}" for op, s in prof["top"]))


def print_packing(arms: dict[str, list[dict]]) -> None:
    print("\n### Packing on vs off, large model, uneven completions (median over steps and rounds)\n")
    print("| algo.pack_sequences | s / step | " + " | ".join(f"{p} s" for p in PHASES) + " |")
    print("|---|---:|" + "---:|" * len(PHASES))
    medians = {}
    for arm, runs in arms.items():
        warm = SIZES["large"]["warmup"]
        step = median([s for r in runs for s in r["steps"][warm:]])
        parts = []
        for phase in PHASES:
            values = [x["seconds"] for r in runs for x in r["records"] if x["phase"] == phase and x["step"] >= warm]
            parts.append(f"{median(values):.3f}" if values else "—")
        medians[arm] = step
        print(f"| {arm} | {step:.3f} | " + " | ".join(parts) + " |")
    ratios = [a["steps"] for a in arms["true"]], [b["steps"] for b in arms["false"]]
    per_round = [median(a) / median(b) for a, b in zip(*ratios, strict=True)]
    print(
        f"\npacked / padded step time: {medians['true'] / medians['false']:.3f}x (rounds: "
        + ", ".join(f"{r:.3f}x" for r in per_round)
        + ")"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--steps", type=int, help="steps per run (default: 20 tiny, 4 large)")
    parser.add_argument("--new-tokens", type=int, help="max new tokens (default: the size's)")
    parser.add_argument("--overrides", nargs="*", default=[], help="Hydra overrides for every run")
    parser.add_argument("--label", default="default config")
    parser.add_argument("--profile-below", type=float, default=0.5, help="profile phases under this share of bound")
    parser.add_argument("--packing-rounds", type=int, default=3, help="alternating pack on/off runs (0: none)")
    parser.add_argument("--worker", nargs=2, metavar=("COUNT", "UNEVEN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    import logging

    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if args.worker:
        count, uneven = (flag == "1" for flag in args.worker)
        size = args.sizes[0]
        steps = args.steps or SIZES[size]["steps"]
        result = run_worker(size, steps, args.overrides, args.new_tokens, count, uneven, args.profile_below)
        print(json.dumps(result))
        return
    flags = [*(["--steps", str(args.steps)] if args.steps else [])]
    flags += [
        *(["--new-tokens", str(args.new_tokens)] if args.new_tokens else []),
        "--profile-below",
        str(args.profile_below),
    ]
    for size in args.sizes:
        print_limit(worker("1", "0", "--sizes", size, *flags, "--overrides", *args.overrides), args.label)
    if "large" in args.sizes and args.packing_rounds:
        arms: dict[str, list[dict]] = {"true": [], "false": []}
        for _ in range(args.packing_rounds):  # alternating, so that a drifting machine load hits both arms alike
            for arm, runs in arms.items():
                overrides = [*args.overrides, f"algo.pack_sequences={arm}"]
                runs.append(worker("0", "1", "--sizes", "large", *flags, "--overrides", *overrides))
        print_packing(arms)


if __name__ == "__main__":
    main()
