"""How many KernelBench problems data=kernelbench loads, and how many reference Models run on a CPU at the shrunk
sizes (docs/kernelbench.md holds the numbers).

For each level directory of a KernelBench checkout: load every problem file as data=kernelbench does
(rlx.data.kernelbench), shrink it as a GPU-less run does (data.cpu_max_elements, data.cpu_min_size: sized on the
meta device, inputs and output), then run its reference the way reward=triton's reference sandbox does
(rlx.rewards.triton.harness: torch.manual_seed(0), Model(*get_init_inputs()), then `--trials` times: seed,
get_inputs(), forward), each problem in a process forked from this one (one torch thread), killed at a wall-clock
limit. Reported per problem: the scale, the elements counted (data=kernelbench leaves out a problem still over
the budget at the smallest sizes the shrink allows), the median forward time and the peak RSS. With --reward, the
same rows also go through reward=triton itself with a probe answer: a reference that fails there (over the reply
cap, reward.limits.output_kb, say) makes the verdict INFRA, with the reason.

Usage: python bench/kernelbench.py --kernelbench <KernelBench checkout> [--levels 1 2] [--reward] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rlx.data.kernelbench.probe import fit_all  # noqa: E402
from rlx.data.kernelbench.problem import level_of, problem_files, read_problem  # noqa: E402
from rlx.data.kernelbench.shrink import Fitted  # noqa: E402


def run_in_child(source: str, trials: int, send) -> None:
    """In a forked child: build the reference and run its trials as the harness does; reply over `send`."""
    import resource

    import torch

    namespace: dict = {"__name__": "__task__"}
    try:
        start = time.perf_counter()
        exec(compile(source, "<task>", "exec"), namespace)
        torch.manual_seed(0)
        model = namespace["Model"](*namespace["get_init_inputs"]())
        build_s = time.perf_counter() - start
        times, sent, output = [], 0, None
        for trial in range(trials):
            torch.manual_seed(1000 * trial)
            inputs = namespace["get_inputs"]()
            start = time.perf_counter()
            output = model(*inputs)
            times.append(time.perf_counter() - start)
            tensors = [x for x in [*inputs, output] if isinstance(x, torch.Tensor)]
            sent += sum(t.numel() * t.element_size() for t in tensors)
        shape = list(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
        reply: dict = {"build_s": build_s, "forward_s": statistics.median(times), "sent_bytes": sent, "output": shape}
    except BaseException as err:  # noqa: BLE001 - every failure is a result here
        first = str(err).splitlines()[0][:160] if str(err) else ""
        reply = {"error": f"{type(err).__name__}: {first}"}
    reply["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    send.send(reply)


def run_reference(source: str, trials: int, timeout: float) -> dict:
    """run_in_child in a process forked from this one (torch is imported once, here), killed after `timeout`."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    start = time.perf_counter()
    child = context.Process(target=run_in_child, args=(source, trials, send))
    child.start()
    send.close()
    reply = receive.recv() if receive.poll(timeout) else None
    child.join(5)
    if child.is_alive():
        child.kill()
        child.join()
    wall = time.perf_counter() - start
    if reply is None:
        why = f"timeout: over {timeout:g} s" if wall >= timeout else f"the process died (exit {child.exitcode})"
        return {"error": why, "wall_s": wall}
    return {**reply, "wall_s": wall}


def measure(path: Path, fitted: Fitted | str, args) -> dict:
    """One problem file: its reference run at the fitted sizes (or why the file did not load)."""
    entry: dict = {"level": level_of(path), "file": path.name}
    if isinstance(fitted, str):
        return {**entry, "loads": False, "error": fitted}
    entry.update(loads=True, scale=fitted.scale, elements=fitted.elements, measured_by=fitted.measured_by)
    entry.update(changed=fitted.changed, **run_reference(fitted.source, args.trials, args.timeout))
    status = entry.get("error") or f"{entry['forward_s'] * 1000:.1f} ms"
    print(f"level {entry['level']} {path.name[:48]:48} x{fitted.scale:<9g} {status}", flush=True)
    return {**entry, "source": fitted.source}


def load_level(directory: Path, args) -> list[tuple[Path, Fitted | str]]:
    """Each problem file of the level, read as data=kernelbench reads it and fitted as a GPU-less run fits it
    (one meta-device child for the level), or why it is not a problem."""
    read: list[tuple[Path, object]] = []
    for path in problem_files(directory):
        if args.only in path.name:
            try:
                read.append((path, read_problem(path, f"data.path={directory}")))
            except ValueError as err:  # a ConfigError: the file is not a problem
                read.append((path, str(err)))
    sources = [p.source for _, p in read if not isinstance(p, str)]
    fitted = iter(fit_all(sources, args.max_elements, args.min_size))
    return [(path, p if isinstance(p, str) else next(fitted)) for path, p in read]


PROBE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        copy_kernel[(1,)](x, out, 1, BLOCK=16)
        return out
"""


def through_reward(results: list[dict], batch: int) -> None:
    """Each loaded row through reward=triton with a probe answer: INFRA means the reference failed there."""
    from rlx.score import build_reward

    reward = build_reward("triton", ["reward.seed=0", "reward.device=cpu"])
    try:
        loaded = [r for r in results if r["loads"]]
        for start in range(0, len(loaded), batch):
            chunk = loaded[start : start + batch]
            began = time.perf_counter()
            verdicts = reward([PROBE] * len(chunk), [{"source": r["source"]} for r in chunk])
            print(f"reward: {start + len(chunk)}/{len(loaded)} in {time.perf_counter() - began:.1f} s", flush=True)
            for entry, verdict in zip(chunk, verdicts, strict=True):
                entry["reward_status"] = verdict.status.value
                entry["reward_reason"] = verdict.details.get("reason", "") if verdict.status.value == "INFRA" else ""
    finally:
        reward.close()


def summary(results: list[dict], max_elements: int) -> str:
    head = "| level | files | problems | kept (fit the budget) | references run (CPU) | median / slowest forward ms |"
    lines = [head + " references run in reward=triton's sandbox |", "|---|---|---|---|---|---|---|"]
    for level in sorted({r["level"] for r in results}):
        rows = [r for r in results if r["level"] == level]
        loaded = [r for r in rows if r["loads"]]
        kept = [r for r in loaded if r["elements"] is None or r["elements"] <= max_elements]
        ran = [r for r in loaded if "forward_s" in r]
        times = [r["forward_s"] * 1000 for r in ran] or [float("nan")]
        checked = [r for r in loaded if "reward_status" in r]
        sandbox = f"{sum(r['reward_status'] != 'INFRA' for r in checked)}/{len(checked)}" if checked else "-"
        lines.append(
            f"| {level} | {len(rows)} | {len(loaded)} | {len(kept)} | {len(ran)}/{len(loaded)} | "
            f"{statistics.median(times):.1f} / {max(times):.0f} | {sandbox} |"
        )
    failed = [r for r in results if not r["loads"] or "error" in r or r.get("reward_status") == "INFRA"]
    failed += [r for r in results if r["loads"] and (r["elements"] or 0) > max_elements and r not in failed]
    if failed:
        lines += ["", "| level | problem | elements | why |", "|---|---|---|---|"]
        for r in failed:
            why = r.get("error") or r.get("reward_reason") or f"over the budget of {max_elements} (left out)"
            lines.append(f"| {r['level']} | {r['file']} | {r.get('elements')} | {why} |")
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # level 4 builds models from the hub: fail at once, offline
    import torch

    torch.set_num_threads(1)  # as in reward=triton's sandbox; imported once, before the children fork
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout (or its KernelBench/)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--max-elements", type=int, default=393216, help="data.cpu_max_elements")
    parser.add_argument("--min-size", type=int, default=8, help="data.cpu_min_size")
    parser.add_argument("--trials", type=int, default=3, help="reward.trials")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per problem")
    parser.add_argument("--reward", action="store_true", help="also run the references through reward=triton")
    parser.add_argument("--out", type=Path, help="write every problem's measurements here (JSON)")
    parser.add_argument("--only", default="", help="only the problem files whose name contains this")
    args = parser.parse_args()
    root = args.kernelbench / "KernelBench" if (args.kernelbench / "KernelBench").is_dir() else args.kernelbench
    results = []
    for level in args.levels:
        directory = root / f"level{level}"
        if not directory.is_dir():
            raise SystemExit(f"--kernelbench {args.kernelbench}: no directory level{level} in {root}")
        results += [measure(path, fitted, args) for path, fitted in load_level(directory, args)]
    if args.reward:
        through_reward(results, batch=10)
    if args.out:
        args.out.write_text(json.dumps([{k: v for k, v in r.items() if k != "source"} for r in results], indent=1))
    print(summary(results, args.max_elements))


if __name__ == "__main__":
    main()
