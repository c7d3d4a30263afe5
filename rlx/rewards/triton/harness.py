"""Runs inside the sandboxed candidate process: builds the task's Model (mode "reference") or the
candidate's ModelNew (mode "candidate"), runs it on seeded inputs and emits one record per trial.

Record per trial: {"trial", "output" (encoded tensor) | "error", "launches" (count), "blocks" (the integer
keyword arguments of the first 8 launches, e.g. [{"B": 128}]), "refused" (torch calls the allow-list refused),
"canaries_ok", "inputs_unchanged"}; then optionally {"timing_ms"} (CUDA only) and
{"event": "done"}. Expected outputs come from a separate reference run and never enter this process.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.triton.guards import ForwardGuard, canaries_intact, count_launches, padded
from rlx.rewards.triton.tensors import encode_tensor


def _name(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {str(error)[:200]}"
    except BaseException:  # noqa: BLE001
        return "?"


def _time_cuda(call: Callable[[], object], repeats: int) -> float:
    """Median ms per forward: CUDA events after warm-up, with the L2 cache flushed before each run. The only
    function here that needs a GPU (tests replace it with a fake clock to check everything around it)."""
    import torch

    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def run(payload: dict, emit: Callable[[dict], None]) -> None:
    import torch

    device, candidate = payload["device"], payload["mode"] == "candidate"
    install_guard(emit, allow_processes=device == "cuda", allow_ctypes=True)
    counter, blocks, guard_box = [0], [], [None]
    count_launches(guard_box, counter, blocks)
    namespace: dict = {"__name__": "__task__"}
    try:
        exec(compile(payload["source"], "<task>", "exec"), namespace)
        if candidate:
            namespace = {**namespace, "__name__": "__candidate__"}
            exec(compile(payload["candidate"], "<candidate>", "exec"), namespace)
        cls = namespace["ModelNew" if candidate else "Model"]
        torch.manual_seed(payload["init_seed"])
        model = cls(*namespace["get_init_inputs"]())
        if hasattr(model, "to"):
            model = model.to(device)
    except MemoryError:
        emit({"event": "oom"})
        return
    except BaseException as err:  # noqa: BLE001
        emit({"event": "load_error", "error": _name(err).split(":")[0], "detail": _name(err)})
        return
    emit({"event": "loaded"})
    for trial, seed in enumerate(payload["seeds"]):
        torch.manual_seed(seed)
        registry: list = []
        inputs = [
            padded(x.to(device), registry) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()
        ]
        before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        guard = ForwardGuard(registry) if candidate else None
        counter[0], guard_box[0] = 0, guard
        blocks.clear()
        record: dict = {"trial": trial}
        try:
            if guard is not None:
                with guard:
                    output = model(*inputs)
            else:
                output = model(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            record["output"] = encode_tensor(output) if isinstance(output, torch.Tensor) else None
            if record["output"] is None:
                record["error"] = f"forward returned {type(output).__name__}, not a tensor"
        except MemoryError:
            emit({"event": "oom"})
            return
        except BaseException as err:  # noqa: BLE001
            record["error"] = _name(err)
        guard_box[0] = None
        record.update(
            launches=counter[0],
            blocks=list(blocks),
            refused=guard.refused if guard else [],
            canaries_ok=canaries_intact(registry),
            inputs_unchanged=all(
                not isinstance(a, torch.Tensor) or torch.equal(a, b) for a, b in zip(inputs, before, strict=True)
            ),
        )
        emit(record)
    if payload["time"]:  # the reward asks for timing only on a GPU
        torch.manual_seed(payload["seeds"][0])
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]
        guard = ForwardGuard([]) if candidate else None
        guard_box[0] = guard

        def call():  # the candidate is timed under the same allow-list it was checked under
            if guard is None:
                return model(*inputs)
            with guard:
                return model(*inputs)

        try:
            emit(
                {
                    "event": "timing",
                    "ms": _time_cuda(call, payload["time_repeats"]),
                    "refused": guard.refused if guard else [],
                }
            )
        except BaseException as err:  # noqa: BLE001  a forward that breaks only while timed earns no speedup
            emit({"event": "timing", "error": _name(err), "refused": guard.refused if guard else []})
    emit({"event": "done"})
