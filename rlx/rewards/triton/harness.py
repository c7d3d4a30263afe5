"""Runs inside the sandboxed candidate process: builds the task's Model (mode "reference") or the
candidate's ModelNew (mode "candidate"), runs it on seeded inputs and emits one record per trial.

Records (rlx.rewards.sandbox.records, the one place their fields are described): events loaded / oom /
load_error, one Trial per seeded input, then a Timing when the payload asks for one (CUDA only) and the done
event. Expected outputs come from a separate reference run and never enter this process.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable

from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.sandbox.records import Event, Timing, Trial
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
    counter = [0]  # launches counted by the launch wrapper, with the block keywords of the first 8
    blocks: list[dict[str, int]] = []
    guard_box: list[ForwardGuard | None] = [None]  # the guard of the forward running now, if any
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
        emit(Event("oom").to_json())
        return
    except BaseException as err:  # noqa: BLE001
        emit(Event("load_error", error=_name(err).split(":")[0], detail=_name(err)).to_json())
        return
    emit(Event("loaded").to_json())
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
        encoded, error = None, None
        try:
            if guard is not None:
                with guard:
                    output = model(*inputs)
            else:
                output = model(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            if isinstance(output, torch.Tensor):
                encoded = encode_tensor(output)
            else:
                error = f"forward returned {type(output).__name__}, not a tensor"
        except MemoryError:
            emit(Event("oom").to_json())
            return
        except BaseException as err:  # noqa: BLE001
            error = _name(err)
        guard_box[0] = None
        unchanged = all(
            not isinstance(a, torch.Tensor) or torch.equal(a, b) for a, b in zip(inputs, before, strict=True)
        )
        record = Trial(
            trial,
            output=encoded,
            error=error,
            launches=counter[0],
            blocks=tuple(blocks),
            refused=tuple(guard.refused) if guard else (),
            canaries_ok=canaries_intact(registry),
            inputs_unchanged=unchanged,
        )
        emit(record.to_json())
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
            timing = Timing(ms=_time_cuda(call, payload["time_repeats"]))
        except BaseException as err:  # noqa: BLE001  a forward that breaks only while timed earns no speedup
            timing = Timing(error=_name(err))
        emit(dataclasses.replace(timing, refused=tuple(guard.refused) if guard else ()).to_json())
    emit(Event("done").to_json())
