"""What reward=triton's bounds checks (rlx.rewards.triton.memory) cost under TRITON_INTERPRET: every honest
program of the recall corpus (tests/rewards/recall/triton/honest) runs its forward in this process, under the
harness's launch wrappers and CUDA emulation, with the interpreter's load/store/atomic entry points checked and
with them as Triton ships them, alternately; the median of each is printed per program, then the totals.

    OMP_NUM_THREADS=1 python bench/triton_bounds.py               # 5 repeats of each forward, each way
    OMP_NUM_THREADS=1 python bench/triton_bounds.py --repeats 11
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: kernels run on the CPU's interpreter

import argparse  # noqa: E402
import linecache  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import triton.runtime.interpreter as interpreter  # noqa: E402

from rlx.rewards.triton import emulation  # noqa: E402
from rlx.rewards.triton.launches import CANDIDATE_FILE, Session, install  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "rewards" / "recall" / "triton"
ENTRY_POINTS = ("create_masked_load", "create_masked_store", "create_atomic_cas", "create_atomic_rmw")


def build(path: pathlib.Path):
    """(model, inputs) of one corpus program, on its task's inputs (seeded)."""
    text = path.read_text()
    found = re.search(r"^# task: (\w+)$", text, re.M)
    assert found is not None, path
    task: dict = {"__name__": "__task__"}
    exec(compile((CORPUS / "tasks" / f"{found.group(1)}.py").read_text(), "<task>", "exec"), task)
    program = {**task, "__name__": "__candidate__"}
    linecache.cache[CANDIDATE_FILE] = (len(text), None, text.splitlines(True), CANDIDATE_FILE)  # for Triton's inspect
    exec(compile(text, CANDIDATE_FILE, "exec"), program)
    torch.manual_seed(0)
    model = program["ModelNew"](*task["get_init_inputs"]())
    return model, list(task["get_inputs"]())


def timed(model, inputs, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model(*inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    shipped = {name: vars(interpreter.InterpreterBuilder)[name] for name in ENTRY_POINTS}
    install(Session())
    emulation.install()
    checked = {name: vars(interpreter.InterpreterBuilder)[name] for name in ENTRY_POINTS}
    totals = {"checked": 0.0, "shipped": 0.0}

    def line(name: str, checked_ms: float, shipped_ms: float) -> None:
        print(f"{name:42s} {checked_ms:11.1f} {shipped_ms:11.1f} {checked_ms / shipped_ms:6.2f}")

    print(f"{'program':42s} {'checked ms':>11s} {'shipped ms':>11s} {'ratio':>6s}")
    with emulation.emulating(), torch.no_grad():
        for path in sorted((CORPUS / "honest").glob("*.py")):
            model, inputs = build(path)
            row = {}
            for way, methods in (("checked", checked), ("shipped", shipped)):
                for name, method in methods.items():
                    setattr(interpreter.InterpreterBuilder, name, method)
                model(*inputs)  # warm: Triton rewrites each kernel once
                row[way] = timed(model, inputs, args.repeats)
                totals[way] += row[way]
            line(path.stem, row["checked"], row["shipped"])
    line("total", totals["checked"], totals["shipped"])


if __name__ == "__main__":
    main()
