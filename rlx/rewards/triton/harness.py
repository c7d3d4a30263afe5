"""Runs inside a sandboxed process (rlx.rewards.sandbox.session), in one of two modes, and answers the
checker's requests with plain data. It holds nothing secret: what it is sent is all it ever has (timing, which
forward takes the values to be checked is drawn only as that forward starts).

reference (program: the task file; a Sandbox of its own, never used for a candidate): {"op": "load", "mode":
"reference", "init_seed", "device"} builds `Model`; {"op": "draw", "trial", "seed"} draws that trial's inputs
(`get_inputs` after `torch.manual_seed(seed)`), runs Model and replies with a ReferenceTrial: inputs and
output as bytes, and its torch.nn layer calls (rlx.rewards.triton.layers.LayerCalls). The seeds reach only this
process.
candidate (program: the completion; the load request carries the task file): {"op": "load", "mode":
"candidate", "task", "init_seed", "device", "torch_in_forward"} builds ModelNew (the program runs with
rlx.rewards.triton.launches' builtins, its source registered for Triton's `inspect`); under
`reference_layers` the task's Model is built first, only to read which torch.nn module types it instantiates.
{"op": "forward", "trial", "inputs"} copies the inputs into canary-padded buffers, runs forward under the
runtime account (rlx.rewards.triton.account) and replies with a CandidateTrial: the output's bytes
(rlx.rewards.triton.tensors.encode_output: exactly a torch.Tensor, not an input's memory), whether a launched
kernel was given its storage, and the in-process facts (kernel accesses outside their launch's tensors:
rlx.rewards.triton.memory). Nothing here draws inputs, so torch's RNG state (seeded with the public `init_seed`
before the model is built, as KernelBench seeds both models alike) says nothing about them.
Under TRITON_INTERPRET (a CPU) both modes install the CUDA-on-host emulation before any task or program code runs
(rlx.rewards.triton.emulation), and hold its device mode while that code runs.
Both: {"op": "time", "repeats", "seed" | "inputs" (+ "check": the reference's timing draw)} -> a Timing (CUDA
only; a candidate's carries the outputs of the timed forwards that were given `check`). A load reply is {"ok": true},
{"error", "detail"} or {"violation"}. The comparison runs in the checker (rlx.rewards.triton.reward).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import linecache
import secrets
import statistics
from collections.abc import Callable

import torch

from rlx.rewards.triton import emulation
from rlx.rewards.triton.account import Account, CallGuard, DispatchAccount
from rlx.rewards.triton.guards import canaries_intact, padded
from rlx.rewards.triton.launches import CANDIDATE_FILE, Launches, Session, candidate_builtins, install, interpreting
from rlx.rewards.triton.layers import LayerCalls, Layers
from rlx.rewards.triton.records import CandidateTrial, Launch, ReferenceTrial, Timing
from rlx.rewards.triton.tensors import (
    NotATensor,
    encode_output,
    encode_tensor,
    plain_output,
    storage_ptr,
    storage_span,
    to_device,
    to_torch,
)

# bound at import (the sandbox's zygote preloads this module before any candidate code exists)
_function_modes, _dispatch_modes = torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack
_torch_function_on, _equal, _clone = torch._C._is_torch_function_enabled, torch.equal, torch._C.TensorBase.clone
MODES = ("kernels_only", "reference_layers")


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
    for _ in range(WARMUP):
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


WARMUP = 3  # untimed forwards before the timed ones (_time_cuda)
CHECKED = 3  # timed forwards of a candidate's given the reference's timing draw, their outputs compared


def _encode_input(value: object) -> dict:
    if isinstance(value, torch.Tensor):
        return {"tensor": encode_tensor(value)}
    if type(value) in (int, float, bool):
        return {"value": value}
    raise TypeError(f"get_inputs() returned a {type(value).__name__}: only tensors and numbers can be sent")


def _decode_input(encoded: dict, device: str) -> object:
    return to_device(to_torch(encoded["tensor"]), device) if "tensor" in encoded else encoded["value"]


def _warm() -> None:
    """Runs the account once at import, in the sandbox's zygote, so that whatever its first use loads is loaded
    once for every forked candidate."""
    # optional dependency: triton (Linux only)
    import triton.runtime.autotuner  # noqa: F401  imported here once rather than in each candidate
    import triton.runtime.interpreter  # noqa: F401

    with torch.no_grad(), CallGuard(Account([], None)), DispatchAccount(Account([], None)):
        torch.empty(1).view(1)


_warm()


def serve(program: str, receive, send) -> None:
    session = Session()
    install(session)
    if interpreting():  # before any task or program code: the interpreter's device is CUDA on host memory
        emulation.install()
    state: dict = {}
    while (request := receive()) is not None:
        message = request[0]
        op = message.get("op")
        try:
            if op == "load":
                reply = _load(program, message, state, session)
            elif op == "draw" and state.get("mode") == "reference":
                reply = _draw(message, state)
            elif op == "forward" and state.get("mode") == "candidate":
                reply = _forward(message, state, session).to_json()
            elif op == "time" and "model" in state:
                reply = _timing(message, state, session).to_json()
            else:
                reply = {"error": "BadRequest", "detail": f"op {op!r} in this state"}
        except MemoryError:
            reply = {"error": "MemoryError", "detail": ""}
        send(reply)


def _init_inputs(task: dict, seed: int) -> list:
    """The constructor's arguments as KernelBench makes them: the task's own `get_init_inputs` after the seed."""
    torch.manual_seed(seed)
    return list(task["get_init_inputs"]())


def _load(program: str, message: dict, state: dict, session: Session | None = None) -> dict:
    """Builds the model (after the seed, as the reference is built). The task's names (`Model`, `get_inputs`,
    `get_init_inputs`, its constants) are read from the task's own namespace, captured before the program runs:
    the program runs in a copy of it, so rebinding one of them changes only the program's copy, never the
    constructor's arguments, the reference's layers, or what the task's functions read."""
    candidate, device, seed = message["mode"] == "candidate", message["device"], message["init_seed"]
    task: dict = {"__name__": "__task__"}
    layers = None
    try:
        with emulation.emulating():
            exec(compile(message["task"] if candidate else program, "<task>", "exec"), task)
            build, init = task["Model"], _init_inputs(task, seed)
            if candidate:
                if message.get("torch_in_forward", "kernels_only") not in MODES:
                    return {"error": "BadRequest", "detail": f"torch_in_forward {message.get('torch_in_forward')!r}"}
                if message.get("torch_in_forward") == "reference_layers":
                    layers = Layers.of(build(*init))
                    init = _init_inputs(task, seed)
                namespace = {**task, "__name__": "__candidate__", "__builtins__": candidate_builtins()}
                linecache.cache[CANDIDATE_FILE] = (len(program), None, program.splitlines(True), CANDIDATE_FILE)
                if session is not None:
                    session.faults.clear()
                exec(compile(program, CANDIDATE_FILE, "exec"), namespace)
                build = namespace["ModelNew"]
            torch.manual_seed(seed)
            model = build(*init)
            if hasattr(model, "to"):
                model = model.to(device)
    except MemoryError:
        raise
    except BaseException as err:  # noqa: BLE001 - SystemExit included: exiting early loads nothing
        if session is not None and session.faults:
            return {"violation": session.faults[0]}
        return {"error": _name(err).split(":")[0], "detail": _name(err)}
    if not _modes_clean():
        return {"violation": "torch mode left active after loading the program"}
    if candidate and session is not None and (changed := session.changed_class()):
        return {"violation": f"the program changed {changed} (monkeypatching a library)"}
    if candidate and session is not None and session.faults:
        return {"violation": session.faults[0]}
    state.update(model=model, task=task, device=device, mode=message["mode"], layers=layers)
    return {"ok": True}


def _draw(message: dict, state: dict) -> dict:
    device, model = state["device"], state["model"]
    try:
        with emulation.emulating():
            torch.manual_seed(message["seed"])
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in state["task"]["get_inputs"]()]
            encoded = [_encode_input(x) for x in inputs]
            with torch.no_grad(), LayerCalls(model) as calls:
                result = model(*inputs)
        output = encode_tensor(result) if isinstance(result, torch.Tensor) else None
        error = None if output is not None else f"forward returned {type(result).__name__}, not a tensor"
    except MemoryError:
        raise
    except BaseException as err:  # noqa: BLE001
        return {"trial": message["trial"], "inputs": [], "error": _name(err)}
    trial = ReferenceTrial(message["trial"], tuple(encoded), output, error, calls.calls.by_type, calls.outside)
    return trial.to_json()


@contextlib.contextmanager
def _accounted(session: Session, account: Account, launches: Launches):
    """The forward's account and launch record, current while it runs (no garbage collection meanwhile: a
    finaliser of the program's would run where the account is already gone), over the emulated device."""
    session.account, session.launches = account, launches
    gc.disable()
    try:
        with emulation.emulating(), torch.no_grad(), CallGuard(account), DispatchAccount(account):
            yield
    finally:
        session.account, session.launches = None, None


def _forward(message: dict, state: dict, session: Session) -> CandidateTrial:
    trial, device, model = message["trial"], state["device"], state["model"]
    try:
        given = [_decode_input(x, device) for x in message["inputs"]]
    except (KeyError, TypeError, ValueError) as err:
        return CandidateTrial(trial, error=f"BadRequest: {err}")
    registry: list = []
    inputs = [padded(x, registry) if isinstance(x, torch.Tensor) else x for x in given]
    spans = [storage_span(x) for x in inputs if isinstance(x, torch.Tensor)]
    before = [_clone(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    account, launches = Account(registry, state["layers"]), Launches()
    encoded, error, violation, from_kernel = None, None, None, False
    session.faults.clear()
    try:
        with _accounted(session, account, launches):
            output = model(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        if not _modes_clean():
            violation = "torch mode left active by forward"
        elif changed := session.changed_class():
            violation = f"the program changed {changed} (monkeypatching a library)"
        else:
            encoded = encode_output(output, spans)
            from_kernel = storage_ptr(output) in launches.storages
    except NotATensor as why:
        violation = str(why)
    except MemoryError:
        raise
    except BaseException as err:  # noqa: BLE001
        error = _name(err)
    finally:
        gc.enable()
    clean = violation is None or not violation.startswith("torch mode")
    unchanged = clean and all(
        not isinstance(a, torch.Tensor) or (isinstance(b, torch.Tensor) and _equal(a, b))
        for a, b in zip(inputs, before, strict=True)
    )
    return CandidateTrial(
        trial,
        output=encoded,
        error=error,
        violation=violation,
        launch_count=launches.count,
        launches=tuple(Launch(kernel, ints, line) for kernel, line, ints in launches.first),
        kernels=tuple(sorted(launches.kernels))[:64],
        refused=tuple(account.refused + launches.refused)[:16],
        canaries_ok=clean and canaries_intact(registry),
        inputs_unchanged=unchanged,
        output_from_kernel=from_kernel,
        out_of_bounds=tuple(session.faults),
        layer_calls=dict(account.calls.by_type),
    )


def _timing(message: dict, state: dict, session: Session) -> Timing:
    """The median ms of a forward, timed like KernelBench; the candidate under the account it was checked under.
    A candidate's timed forwards take the first trial's inputs, but CHECKED of them, drawn as they come, take
    the reference's timing draw (`check`: values no trial had); their outputs return for the checker to compare."""
    model, device = state["model"], state["device"]
    checked: list = []  # a copy of each checked forward's output
    draws: list = []  # a copy of the timing draw for each check
    left = [0, 0]  # checks left to draw, timed forwards left
    if state["mode"] == "candidate":
        given = [_decode_input(x, device) for x in message["inputs"]]
        fresh = [_decode_input(x, device) for x in message.get("check", [])]
        # Each forward gets inputs of its own, copied before the timing and all alive until it ends (new objects,
        # new storage): the trials give every forward new inputs, so a forward that keeps its last output by its
        # inputs' identity (id, data_ptr) and returns it when they come again computes in every trial and in no
        # timed forward, and earned the speedup cap.
        sets = [
            [_clone(x) if isinstance(x, torch.Tensor) else x for x in given] for _ in range(WARMUP + message["repeats"])
        ]
        # A forward that keeps an output from the trials (by its call count, its inputs' shapes) and has a kernel
        # copy it out computes nothing while timed. Some timed forwards get values no trial had, so a kept output
        # is wrong there; which ones is drawn forward by forward (no list of them exists ahead of its forward).
        draws = [[_clone(x) if isinstance(x, torch.Tensor) else x for x in fresh] for _ in range(CHECKED)]
        left = [min(CHECKED, message["repeats"]) if fresh else 0, message["repeats"]]  # checks, timed forwards
    else:
        torch.manual_seed(message["seed"])
        sets = [[x.to(device) if isinstance(x, torch.Tensor) else x for x in state["task"]["get_inputs"]()]]
    account = Account([], state["layers"]) if state["mode"] == "candidate" else None
    launches = Launches()
    turn = itertools.count()

    def call():
        index = next(turn)
        inputs = sets[index % len(sets)]
        if account is None:
            with torch.no_grad():
                return model(*inputs)
        check = False
        if index >= WARMUP and left[1] > 0:
            check = secrets.randbelow(left[1]) < left[0]  # k of the n timed forwards left, each as likely
            left[0], left[1] = left[0] - check, left[1] - 1
            inputs = draws.pop() if check else inputs
        mine = Launches()
        try:
            with _accounted(session, account, mine):
                output = model(*inputs)
        finally:
            launches.refused.extend(mine.refused)
        # as in a trial, a kernel this forward launched was given the output's storage: an output kept from an
        # earlier forward and returned untouched (calls counted, then the first output again) is no timed work
        if not isinstance(output, torch.Tensor) or storage_ptr(output) not in mine.storages:
            raise RuntimeError("a timed forward returned an output that no kernel it launched was given")
        if not _modes_clean():  # the harness's own torch calls below would run the program's mode
            raise RuntimeError("torch mode left active by a timed forward")
        if check:  # a copy now: a program may write every output into one buffer it keeps (an honest reuse)
            plain_output(output, [storage_span(x) for x in inputs if isinstance(x, torch.Tensor)])
            checked.append(_clone(output))
        return output

    try:
        ms = _time_cuda(call, message["repeats"])
        refused = () if account is None else tuple(account.refused + launches.refused)
        outputs = tuple(encode_tensor(output) for output in checked)
        return Timing(ms=ms, refused=refused, outputs=outputs)
    except BaseException as err:  # noqa: BLE001  a forward that breaks only while timed earns no speedup
        refused = () if account is None else tuple(account.refused + launches.refused)
        return Timing(error=_name(err), refused=refused)
    finally:
        gc.enable()
