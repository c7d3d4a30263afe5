"""Sizing KernelBench problems for a CPU by their real shapes: each problem is built and run on torch's meta device
(shapes only: no memory, no arithmetic) in one child process, and its sizes are scaled until its inputs and its
output together hold at most `max_elements` elements (rlx.data.kernelbench.shrink.fit). An input count read from
the source alone misses outputs larger than the inputs: a tall-skinny matmul (M x 32 times 32 x M), a strided
transposed convolution. reward=triton's sandbox sends every one of them back (inputs and output, each trial),
within reward.limits.output_kb.

The problem files are the user's data, not a model's output; still, they run here only on the meta device, in a
child process with a per-problem alarm, offline (HF_HUB_OFFLINE), never in the trainer. A problem the meta device
cannot run (an op with data-dependent shapes, a hub download) is sized by its inputs as read from its source.

Child: `python -m rlx.data.kernelbench.probe` reads {"sources", "max_elements", "min_size"} as JSON on stdin and
writes one JSON list of Fitted fields; where it sees a GPU it leaves every problem as published.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from rlx.data.kernelbench.shrink import Fitted, fit

log = logging.getLogger(__name__)
PROBLEM_S = 20  # the alarm on one problem (building and running it on meta, at each scale tried)
ROOT = Path(__file__).resolve().parents[3]


class Alarm(Exception):
    pass


def meta_elements(source: str) -> int | None:
    """Elements of the inputs get_inputs() makes and of the output Model makes of them, on the meta device;
    None where that does not run."""
    # start-up time: the parent only reads sources and sizes; torch is imported in the probing child alone
    import torch

    namespace: dict = {"__name__": "__kernelbench_probe__"}
    try:
        with torch.device("meta"):
            exec(compile(source, "<problem>", "exec"), namespace)
            model = namespace["Model"](*namespace["get_init_inputs"]())
            inputs = list(namespace["get_inputs"]())
            output = model(*inputs)
    except Alarm:
        raise
    except Exception:  # noqa: BLE001 - any failure means: size it some other way
        return None
    outputs = output if isinstance(output, (tuple, list)) else [output]
    tensors = [x for x in [*inputs, *outputs] if isinstance(x, torch.Tensor)]
    return (
        sum(t.numel() for t in tensors) if len(outputs) == sum(isinstance(o, torch.Tensor) for o in outputs) else None
    )


def fit_one(source: str, max_elements: int, min_size: int) -> Fitted:
    """fit() by the meta device's count, or by the source's input count where the meta device cannot run it. The
    input count's scale bounds the search (an output only adds elements), so the meta device starts there, or, if
    the problem does not run there, at KernelBench's sizes."""

    def on_alarm(*_):
        raise Alarm

    by_inputs = fit(source, max_elements, min_size)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(PROBLEM_S)
    try:
        for start in dict.fromkeys((by_inputs.scale, 1.0)):
            fitted = fit(source, max_elements, min_size, meta_elements, start)
            if fitted.elements is not None:
                return dataclasses.replace(fitted, measured_by="meta")
    except Alarm:
        pass
    finally:
        signal.alarm(0)
    return by_inputs


def child() -> None:
    # start-up time: as in meta_elements, torch only in the probing child
    import torch

    torch.set_num_threads(1)
    request = json.loads(sys.stdin.read())
    gpu = torch.cuda.is_available()
    fitted = [
        Fitted(s, {}, 1.0, None, "gpu") if gpu else fit_one(s, request["max_elements"], request["min_size"])
        for s in request["sources"]
    ]
    sys.stdout.write(json.dumps([dataclasses.asdict(f) for f in fitted]))


def fit_all(sources: list[str], max_elements: int, min_size: int, timeout_s: float = 600.0) -> list[Fitted]:
    """Every source fitted by a child process (meta-device shapes), or left as published where that process sees
    a GPU (measured_by "gpu"); fitted by the sources alone (their input counts) if the child cannot run or
    finish. The trainer itself never imports torch for this."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    request = json.dumps({"sources": sources, "max_elements": max_elements, "min_size": min_size})
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rlx.data.kernelbench.probe"],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
        )
        if done.returncode == 0:
            return [
                Fitted(**{**f, "changed": {k: tuple(v) for k, v in f["changed"].items()}})
                for f in json.loads(done.stdout)
            ]
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        why = f"it ran over {timeout_s:g} s"
    except (OSError, ValueError) as err:
        why = str(err)
    log.warning("data=kernelbench: sizing the problems on the meta device failed (%s); sized by their inputs", why)
    return [fit(source, max_elements, min_size) for source in sources]


if __name__ == "__main__":
    child()
