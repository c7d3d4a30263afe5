"""A new user's first command on a busy laptop: `python -m rlx` as the README types it (no OMP_NUM_THREADS), from a
cold cache (a fresh RLX_CACHE, so the warm start runs), beside `--competitors` CPU-bound processes
(`python -c "while True: pass"`, as a browser or a build would be). Reports the wall time and the longest silence
between two output lines (the target: done in <= 6 min, a line at least every 15 s, with one competitor on 2 cores).

The machine's own load is printed before and after (`os.getloadavg`): on a shared machine the other jobs add to
the competitors, and the figure is only comparable with the load stated beside it.

    python bench/first_contact.py                       # one competitor, the default run
    python bench/first_contact.py --competitors 0 -- trainer.max_steps=50
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--competitors", type=int, default=1)
    parser.add_argument("overrides", nargs="*", help="extra `python -m rlx` arguments (after --)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(RLX_CACHE=tempfile.mkdtemp(prefix="rlx-cold-"), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    run_dir = tempfile.mkdtemp(prefix="rlx-first-contact-")
    command = [sys.executable, "-m", "rlx", f"hydra.run.dir={run_dir}", *args.overrides]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  cores {os.cpu_count()}  load {os.getloadavg()}")
    print(f"competitors: {args.competitors}  command: python -m rlx {' '.join(command[3:])}", flush=True)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.competitors)]
    start = last = time.perf_counter()
    gaps: list[float] = []
    try:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
            print(f"[{now - start:6.1f} s] {line}", end="", flush=True)
        returncode = proc.wait()
    finally:
        for process in busy:
            process.kill()
            process.wait()
    wall = time.perf_counter() - start
    print(f"\nload after {os.getloadavg()}")
    print(
        f"exit {returncode}; wall {wall:.0f} s ({wall / 60:.1f} min); longest silence between lines "
        f"{max(gaps, default=wall):.1f} s; {len(gaps)} lines"
    )


if __name__ == "__main__":
    main()
