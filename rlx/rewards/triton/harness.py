"""Runs inside a sandboxed process, in one of two modes.

reference: only the task file runs here. It draws each trial's inputs from the trial's seed (`get_inputs`
after `torch.manual_seed`), runs `Model` on them and emits a ReferenceTrial with the inputs and the output,
both as bytes. The seeds exist in this process only: the candidate's process never sees them.
candidate: builds the candidate's ModelNew, then for each trial receives the inputs as bytes (payload
`inputs`), copies them into canary-padded buffers, runs the guarded forward and emits a CandidateTrial with
the output's bytes (rlx.rewards.triton.tensors.encode_output: exactly a torch.Tensor, not an input's memory).
Nothing here draws inputs, so torch's RNG state in this process (seeded with the public `init_seed` before
the model is built, as KernelBench seeds both models alike) says nothing about them.

Records (rlx.rewards.triton.records, events of rlx.rewards.sandbox.records): loaded / oom / load_error /
violation events, one trial record per trial, then a Timing when the payload asks for one (CUDA only) and the
done event. The comparison with the reference runs in the checker (rlx.rewards.triton.reward).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable

import torch

from rlx.rewards.sandbox.guard import install_guard
from rlx.rewards.sandbox.records import Event, Timing
from rlx.rewards.sandbox.runner import Emit
from rlx.rewards.triton.guards import ForwardGuard, canaries_intact, count_launches, padded
from rlx.rewards.triton.records import CandidateTrial, Launch, ReferenceTrial
from rlx.rewards.triton.tensors import NotATensor, encode_output, encode_tensor, storage_span, to_torch

# bound at import (the sandbox server preloads this module before any candidate code exists)
_function_modes, _dispatch_modes = torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack
_torch_function_on, _equal, _clone = torch._C._is_torch_function_enabled, torch.equal, torch._C.TensorBase.clone


def _modes_clean() -> bool:
    """No torch function or dispatch mode is active and torch functions are not disabled: the harness's own
    torch calls run torch's code, not a mode the program left behind."""
    return _function_modes() == 0 and _dispatch_modes() == 0 and _torch_function_on()


def _name(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {str(error)[:200]}"
    except BaseException:  # noqa: BLE001
        return "?"


def _time_cuda(call: Callable[[], object], repeats: int) -> float:
    """Median ms per forward: CUDA events after warm-up, with the L2 cache flushed before each run. The only
    function here that needs a GPU (tests replace it with a fake clock to check everything around it)."""
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


def _encode_input(value: object) -> dict:
    if isinstance(value, torch.Tensor):
        return {"tensor": encode_tensor(value)}
    if type(value) in (int, float, bool):
        return {"value": value}
    raise TypeError(f"get_inputs() returned a {type(value).__name__}: only tensors and numbers can be sent")


def _decode_input(encoded: dict, device: str) -> object:
    return to_torch(encoded["tensor"]).to(device) if "tensor" in encoded else encoded["value"]


def run(payload: dict, emit: Emit, alarm: Emit) -> None:
    """emit: keep a record for the final block; alarm: the tripwire's, also written at once (runner.recorder)."""
    device, candidate = payload["device"], payload["mode"] == "candidate"
    install_guard(alarm, allow_processes=device == "cuda", allow_ctypes=device == "cuda")
    counter = [0]  # launches counted by the launch wrapper, with the kernel and block keywords of the first 8
    launches: list[tuple[str, dict[str, int]]] = []
    count_launches(counter, launches)
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
    if not _modes_clean():
        emit(Event("violation", what="torch mode left active", detail="after loading the program").to_json())
        return
    emit(Event("loaded").to_json())
    try:
        if not candidate:
            _reference_trials(payload, namespace, model, device, emit)
        else:
            for trial, inputs in enumerate(payload["inputs"]):
                given = [_decode_input(x, device) for x in inputs]
                result = _candidate_trial(trial, given, model, device, counter, launches)
                emit(result.to_json())
                if result.violation is not None and result.violation.startswith("torch mode"):
                    return  # the harness's own torch calls are not to be trusted after this
    except MemoryError:
        emit(Event("oom").to_json())
        return
    if payload["time"]:  # the reward asks for timing only on a GPU
        _timing(payload, namespace, model, device, candidate, emit)
    emit(Event("done").to_json())


def _reference_trials(payload: dict, namespace: dict, model, device: str, emit: Emit) -> None:
    for trial, seed in enumerate(payload["seeds"]):
        torch.manual_seed(seed)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]
        encoded = [_encode_input(x) for x in inputs]
        output, error = None, None
        try:
            result = model(*inputs)
            output = encode_tensor(result) if isinstance(result, torch.Tensor) else None
            error = None if output is not None else f"forward returned {type(result).__name__}, not a tensor"
        except MemoryError:
            raise
        except BaseException as err:  # noqa: BLE001
            error = _name(err)
        emit(ReferenceTrial(trial, tuple(encoded), output, error).to_json())


def _candidate_trial(trial: int, given: list, model, device: str, counter: list, launches: list) -> CandidateTrial:
    registry: list = []
    inputs = [padded(x, registry) if isinstance(x, torch.Tensor) else x for x in given]
    spans = [storage_span(x) for x in inputs if isinstance(x, torch.Tensor)]
    before = [_clone(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    guard = ForwardGuard(registry)
    counter[0] = 0
    launches.clear()
    encoded, error, violation = None, None, None
    try:
        with guard:
            output = model(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        if not _modes_clean():
            violation = "torch mode left active by forward"
        else:
            encoded = encode_output(output, spans)
    except NotATensor as why:
        violation = str(why)
    except MemoryError:
        raise
    except BaseException as err:  # noqa: BLE001
        error = _name(err)
    clean = violation is None or not violation.startswith("torch mode")
    unchanged = clean and all(
        not isinstance(a, torch.Tensor) or _equal(a, b) for a, b in zip(inputs, before, strict=True)
    )
    return CandidateTrial(
        trial,
        output=encoded,
        error=error,
        violation=violation,
        launch_count=counter[0],
        launches=tuple(Launch(kernel, ints) for kernel, ints in launches),
        refused=tuple(guard.refused),
        canaries_ok=clean and canaries_intact(registry),
        inputs_unchanged=unchanged,
    )


def _timing(payload: dict, namespace: dict, model, device: str, candidate: bool, emit: Emit) -> None:
    if candidate:
        inputs = [_decode_input(x, device) for x in payload["inputs"][0]]
    else:
        torch.manual_seed(payload["seeds"][0])
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]
    guard = ForwardGuard([]) if candidate else None

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
