"""reward=triton: a KernelBench-format task (`source`: Model, get_inputs, get_init_inputs) and a completion
that defines `ModelNew` launching @triton.jit kernels. An optional row field `preamble` (imports the prompt
already showed, see data=kernels) is prepended to the completion.

Where each thing lives (issue 26: a verdict is computed where candidate code never runs):
  checker (here)      static checks, the comparison, the verdict, the plan;
  reference sandbox   only the task file (a Sandbox of its own, rlx.rewards.sandbox.session): draws each trial's
                      inputs from secret seeds (drawn per reward, or `seed`) and runs Model on them; inputs
                      and outputs come back as bytes (cached per task);
  candidate sandbox   the completion: gets the inputs as bytes (no seed, no generator), returns the bytes of
                      exactly a torch.Tensor per trial and the harness's in-process facts
                      (rlx.rewards.triton.harness: the requests and replies).
Checks, each with its own label in `details["checks"]`:
  parses, defines_model_new       static (FORMAT);
  defines_jit_kernel, loads_and_stores, vocabulary   static (VIOLATION): KernelBench/TritonRL's syntax checks
                  and the static check (rlx.rewards.triton.static), which keeps candidate code away from the
                  harness's state, frames, files and Triton's interpreter internals;
  launched        every trial launched a kernel, each one a @triton.jit def of the program, one of them writing
                  memory (known at runtime from the launched functions' code objects, not from decorator names);
  no_fallback     no torch compute inside ModelNew.forward: the runtime account (rlx.rewards.triton.account)
                  records every ATen op and who issued it; only metadata, views, allocations and constant fills
                  of fresh buffers are the program's to run (under torch_in_forward=reference_layers, also the
                  forward of the reference Model's own layer types), Triton's own argument marshalling is exempt;
                  a launch that carries a non-tensor pointer or a tensor constexpr, or a kernel called as Python,
                  fails it too;
  kernels_compute under reference_layers, where the reference computes nothing outside its torch.nn layers (its
                  own record, rlx.rewards.triton.layers), the program did not run every one of its layer calls
                  (that would leave a kernel nothing but a copy);
  kernel_output   the returned tensor's storage was passed to a kernel launched during the forward;
  plain_output    forward returned exactly a torch.Tensor, not an input's memory, and left no torch mode on;
  in_bounds       under TRITON_INTERPRET every kernel load, store and atomic lay inside its launch's tensors
                  (rlx.rewards.triton.memory: an access outside is never made), and the canary padding around
                  every buffer is intact;
  inputs_unchanged   inputs compared after the call;
  correct         all trials match the reference: exact dtype and shape, finite, KernelBench atol = rtol
                  (1e-4 fp32, 1e-2 fp16/bf16), compared here on decoded bytes;
  speedup         GPU only: reference and candidate timed by the harness with CUDA events after warm-up,
                  L2 flushed; on CPU kernels run under TRITON_INTERPRET=1 and speed is reported as
                  unavailable (None), never estimated.
  plan            the completion's `# plan:` line agrees with the kernels it launched and with the row's
                  reference plan (rlx.rewards.triton.plan); earned by a PASS only.
Reward = valid × (correct + speedup_weight · min(speedup, speedup_cap)) + plan_weight · plan · [PASS], the
speedup term only when correct and measured. Components: valid, compiled (forward ran without raising), correct,
fast_1 (correct and faster than torch; 0 where unmeasured), plan (0 unless PASS). An INFRA verdict carries no
components. No text a model writes makes this raise: a parser or decoder that gives up (RecursionError,
MemoryError) gives a labelled zero.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets

from rlx.rewards.base import Reward, Status, Verdict
from rlx.rewards.sandbox.session import Failure, Limits, Sandbox, Session
from rlx.rewards.triton.plan import plan_score
from rlx.rewards.triton.records import CandidateTrial, ReferenceTrial, Timing, first_by_trial
from rlx.rewards.triton.static import StaticResult, static_checks, task_names
from rlx.rewards.triton.tensors import compare
from rlx.rewards.unit_tests import extract_code

HARNESS = "rlx.rewards.triton.harness"
MODULES = tuple(
    f"rlx.rewards.triton.{m}"
    for m in (
        "account",
        "emulation",
        "guards",
        "launches",
        "layers",
        "libdevice",
        "memory",
        "records",
        "tensors",
        "vocabulary",
    )
)
TORCH_IN_FORWARD = ("kernels_only", "reference_layers")
PACKAGES = ("torch", "triton", "numpy")
# Public: the models' weights are initialised alike (KernelBench seeds both); the trial inputs do not come from
# it, nor from anything else in the candidate's process.
INIT_SEED = 0
RUNTIME_CHECKS = (
    "launched",
    "no_fallback",
    "kernels_compute",
    "kernel_output",
    "plain_output",
    "in_bounds",
    "inputs_unchanged",
)
ZERO = {"valid": 0.0, "compiled": 0.0, "correct": 0.0, "fast_1": 0.0, "plan": 0.0}
FORMAT_ERRORS = ("SyntaxError", "IndentationError", "TabError")
Outcome = dict | Failure  # a session's replies ({"load": reply} or {"trials": [...], "timing": ...}), or its end


def reference_trials(reference: Outcome) -> dict[int, ReferenceTrial] | str:
    """The reference's trials with outputs, or why the reference run cannot be compared against."""
    if isinstance(reference, Failure):
        return f"{reference.status.value}: {reference.reason}"
    if "load" in reference:
        return f"loading the task raised {reference['load'].get('error')}"
    found = first_by_trial(reference["trials"], ReferenceTrial.parse)
    if not found or any(t.output is None for t in found.values()):
        return "its forward returned no tensor"
    return found


def runs_every_layer_call(reference: ReferenceTrial, candidate: CandidateTrial) -> bool:
    """Whether the program ran, itself, every torch.nn layer call of a reference that computes nothing outside
    its layers (reward.torch_in_forward=reference_layers): then the layers made the whole answer, and a kernel at
    most copied it. A reference with any compute outside its layers leaves that to kernels, whatever the program
    keeps."""
    if reference.outside or not reference.calls or not candidate.layer_calls:
        return False
    return all(candidate.layer_calls.get(kind, 0) >= count for kind, count in reference.calls.items())


def _load_failure(reply: dict) -> tuple[Status, str]:
    if "violation" in reply:
        return Status.VIOLATION, str(reply["violation"])[:200]
    error = str(reply.get("error"))[:80]
    status = Status.FORMAT if error in FORMAT_ERRORS else Status.OOM if error == "MemoryError" else Status.CRASH
    return status, f"loading the code raised {error}"


def decide(
    checks: dict,
    outcome: Outcome,
    reference: Outcome,
    speedup_cap: float,
    speedup_weight: float,
    static: StaticResult | None = None,
) -> Verdict:
    """Verdict from the static checks, what the candidate's session answered (or how it ended) and the
    reference's (no plan: TritonReward adds it to a PASS). `static`: the program's kernels and which of them
    write memory (None: any launch counts)."""
    refused_word = static.reason if static is not None else ""
    if not (checks["parses"] and checks["defines_model_new"]):
        return Verdict(0.0, Status.FORMAT, ZERO, {"checks": checks})
    for check, why in (
        ("defines_jit_kernel", "no @triton.jit kernel"),
        ("loads_and_stores", "no kernel both loads and stores"),
        ("vocabulary", refused_word),
    ):
        if not checks.get(check, True):
            return Verdict(0.0, Status.VIOLATION, ZERO, {"checks": checks, "reason": why})
    expected = reference_trials(reference)
    if isinstance(expected, str):
        return Verdict(0.0, Status.INFRA, {}, {"checks": checks, "reason": f"reference run failed: {expected}"})
    if isinstance(outcome, Failure):
        base = {"wall_s": outcome.facts.wall_s, "output_tail": outcome.facts.output_tail}
        return Verdict(0.0, outcome.status, ZERO, {**base, "checks": checks, "reason": outcome.reason})
    if "load" in outcome:
        status, why = _load_failure(outcome["load"])
        return Verdict(0.0, status, ZERO, {"checks": checks, "reason": why})
    found = first_by_trial(outcome["trials"], CandidateTrial.parse)
    got = [found.get(t) for t in sorted(expected)]  # None: the trial left no well-formed reply
    errors = [r.error if r else None for r in got if r is None or r.error]
    if any(e is not None and e.startswith("MemoryError") for e in errors):
        return Verdict(0.0, Status.OOM, ZERO, {"checks": checks, "reason": "MemoryError in forward"})
    comparisons = [
        compare(r.output, expected[t].output or {}) if r and r.output else (False, "")
        for t, r in zip(sorted(expected), got, strict=True)
    ]

    def launched(r: CandidateTrial | None) -> bool:
        if r is None or r.launch_count == 0:
            return False
        return static is None or (set(r.kernels) <= static.kernels and bool(set(r.kernels) & static.writers))

    checks = {
        **checks,
        "launched": all(launched(r) for r in got),
        "no_fallback": not any(r is not None and r.refused for r in got),
        "kernels_compute": not any(
            r is not None and runs_every_layer_call(expected[t], r) for t, r in zip(sorted(expected), got, strict=True)
        ),
        "kernel_output": all(r is not None and r.output_from_kernel for r in got),
        "plain_output": not any(r is not None and r.violation for r in got),
        "in_bounds": all(r is not None and r.canaries_ok and not r.out_of_bounds for r in got),
        "inputs_unchanged": all(r is not None and r.inputs_unchanged for r in got),
        "compiled": not errors,
        "correct": all(ok for ok, _ in comparisons),
    }
    violations = [r.violation for r in got if r is not None and r.violation]
    foreign = {k for r in got if r is not None and static is not None for k in r.kernels} - (
        static.kernels if static is not None else set()
    )
    details = {
        "checks": checks,
        "refused": sorted({x for r in got if r is not None for x in r.refused})[:6],
        **(
            {"out_of_bounds": faults[:3]}
            if (faults := [x for r in got if r is not None for x in r.out_of_bounds])
            else {}
        ),
        **({"foreign_kernels": sorted(f"{n}@{line}" for n, line in foreign)[:3]} if foreign else {}),
        "errors": errors[:3],
        "mismatch": [why for ok, why in comparisons if not ok][:3],
        **({"output": violations[0]} if violations else {}),
    }
    valid = all(checks[k] for k in RUNTIME_CHECKS)
    speedup = _speedup(outcome.get("timing"), reference.get("timing") if isinstance(reference, dict) else None)
    details["speedup"] = speedup if speedup is not None else "unavailable (no GPU timing: CPU/TRITON_INTERPRET)"
    correct = float(checks["correct"] and checks["compiled"])
    components = {
        "valid": float(valid),
        "compiled": float(checks["compiled"]),
        "correct": correct * valid,
        "fast_1": float(bool(valid and correct and speedup is not None and speedup > 1.0)),
        "plan": 0.0,
    }
    if not checks["compiled"] and checks["no_fallback"] and checks["plain_output"] and checks["in_bounds"]:
        return Verdict(0.0, Status.CRASH, {**components, "valid": 0.0}, {**details, "reason": "forward raised"})
    if not valid:
        failed = [k for k in RUNTIME_CHECKS if not checks[k]]
        return Verdict(0.0, Status.VIOLATION, {**components, "correct": 0.0}, {**details, "reason": f"failed {failed}"})
    if not correct:
        return Verdict(0.0, Status.FAIL, components, details)
    term = speedup_weight * min(speedup, speedup_cap) if speedup is not None else 0.0
    return Verdict(1.0 + term, Status.PASS, components, details)


def _speedup(candidate: object, reference: object) -> float | None:
    """Reference ms / candidate ms from the harness's timing replies (GPU only); None where either is missing,
    broke, or the candidate made a refused torch call while it was timed."""
    new, ref = Timing.parse(candidate), Timing.parse(reference)
    if new is None or ref is None or new.refused or new.ms is None or ref.ms is None:
        return None
    return ref.ms / new.ms


class TritonReward(Reward):
    required_fields = ("source",)

    def __init__(
        self,
        workers: int,
        device: str,
        trials: int,
        seed: int | None,
        speedup_cap: float,
        speedup_weight: float,
        plan_weight: float,
        time_repeats: int,
        limits: dict,
        base_uid: int,
        torch_in_forward: str | None = None,
    ) -> None:
        """Refuses to start (SandboxUnavailable, one line) where no sandbox can be built."""
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"reward.device must be 'auto', 'cpu' or 'cuda' (got {device!r})")
        if torch_in_forward is not None and torch_in_forward not in TORCH_IN_FORWARD:
            raise ValueError(
                f"reward.torch_in_forward must be 'kernels_only' (all compute in Triton kernels), 'reference_layers' "
                f"(the reference Model's own torch.nn layers may run too) or null (the task's, else kernels_only) "
                f"(got {torch_in_forward!r})"
            )
        self.torch_in_forward = torch_in_forward
        if device == "auto":  # the same command scores on a GPU machine and on a CPU-only one
            # deferred: rlx.score scores without torch; only device=auto asks torch
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        # the trial inputs' seeds: null draws one per reward. They go only to the reference's sandbox (the task
        # file); the candidate's gets the inputs as bytes, so no seed is there to read, and an unguessable one
        # keeps a completion from drawing the same inputs itself and precomputing their answers
        seed = secrets.randbelow(2**31 - 1000 * trials) if seed is None else seed
        self.device, self.trials, self.seed = device, trials, seed
        self.speedup_cap, self.speedup_weight, self.time_repeats = speedup_cap, speedup_weight, time_repeats
        if plan_weight < 0:
            raise ValueError(
                f"reward.plan_weight must be >= 0 (got {plan_weight}); 0 logs the plan without rewarding it"
            )
        self.plan_weight = plan_weight
        self.limits = Limits(**limits)
        env = {"TRITON_INTERPRET": "1"} if device == "cpu" else {}
        common = dict(modules=MODULES, packages=PACKAGES, preload=("torch", "triton"), env=env)
        # the references' expected outputs pass through their own jail, never one that forks candidates
        self.sandbox = Sandbox(HARNESS, workers, self.limits, base_uid=base_uid, **common)  # type: ignore[arg-type]
        self.reference_sandbox = Sandbox(HARNESS, 1, self.limits, base_uid=base_uid + workers, **common)  # type: ignore[arg-type]
        self._references: dict[str, Outcome] = {}

    def bind(self, task) -> None:
        """Resolve `torch_in_forward=None` from the task this reward scores (data=kernelbench states its level's:
        level 2 and up keep the reference's layers), else kernels_only; called once at start by rlx.train's
        preflight and rlx.score."""
        if self.torch_in_forward is None:
            stated = getattr(task, "torch_in_forward", None)
            if stated is not None and stated not in TORCH_IN_FORWARD:
                raise ValueError(f"the task states torch_in_forward={stated!r}: expected one of {TORCH_IN_FORWARD}")
            self.torch_in_forward = stated

    @property
    def policy(self) -> str:
        """The torch policy rows are scored under: reward.torch_in_forward, else the bound task's, else kernels_only."""
        return self.torch_in_forward or "kernels_only"

    def _load(self, task: str, mode: str) -> dict:
        message = {"op": "load", "mode": mode, "task": task, "init_seed": INIT_SEED, "device": self.device}
        return {**message, "torch_in_forward": self.policy}

    def _reference_check(self, session: Session, index: int) -> dict:
        loaded, _ = session.request(self._load("", "reference"))
        if loaded.get("ok") is not True:
            return {"load": loaded}
        seeds = [self.seed + 1000 * t for t in range(self.trials)]
        trials = [session.request({"op": "draw", "trial": t, "seed": s})[0] for t, s in enumerate(seeds)]
        timing = None
        if self.device == "cuda":
            timing = session.request({"op": "time", "seed": seeds[0], "repeats": self.time_repeats})[0]
        return {"trials": trials, "timing": timing}

    def _candidate_check(self, task: str, inputs: list[list[dict]]):
        def check(session: Session, index: int) -> dict:
            loaded, _ = session.request(self._load(task, "candidate"))
            if loaded.get("ok") is not True:
                return {"load": loaded}
            trials = []
            for trial, given in enumerate(inputs):
                reply, _ = session.request({"op": "forward", "trial": trial, "inputs": given})
                trials.append(reply)
                if str(reply.get("violation", "")).startswith(("torch mode", "the program changed")):
                    return {"trials": trials}  # its harness's own torch calls are not to be trusted after this
            timing = None
            if self.device == "cuda":
                timing = session.request({"op": "time", "inputs": inputs[0], "repeats": self.time_repeats})[0]
            return {"trials": trials, "timing": timing}

        return check

    def _references_for(self, sources: list[str]) -> dict[str, Outcome]:
        """Reference outcomes by source hash; usable ones are cached for the rest of training."""
        keys = {hashlib.sha256(s.encode()).hexdigest(): s for s in sources}
        missing = sorted(k for k in keys if k not in self._references)
        fresh = self.reference_sandbox.map([keys[k] for k in missing], self._reference_check)
        found = {k: self._references[k] for k in keys if k in self._references}
        for key, outcome in zip(missing, fresh, strict=True):
            found[key] = outcome
            if not isinstance(reference_trials(outcome), str):
                self._references[key] = outcome
        return found

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        references = self._references_for([row["source"] for row in rows])
        keys = [hashlib.sha256(row["source"].encode()).hexdigest() for row in rows]
        codes = [row.get("preamble", "") + extract_code(c) for c, row in zip(completions, rows, strict=True)]
        statics = [static_checks(code, *task_names(row["source"])) for code, row in zip(codes, rows, strict=True)]
        runnable: list[tuple[int, list[list[dict]]]] = []
        for i, (checks, *_) in enumerate(statics):
            expected = reference_trials(references[keys[i]])
            if all(checks.values()) and not isinstance(expected, str):
                runnable.append((i, [list(expected[t].inputs) for t in sorted(expected)]))
        checks_by = [self._candidate_check(rows[i]["source"], inputs) for i, inputs in runnable]
        fresh = self.sandbox.map([codes[i] for i, _ in runnable], lambda session, j: checks_by[j](session, j))
        outcomes = {i: outcome for (i, _), outcome in zip(runnable, fresh, strict=True)}
        return [
            self._verdict(completions[i], codes[i], statics[i], outcomes.get(i), references[keys[i]], row.get("plan"))
            for i, row in enumerate(rows)
        ]

    def _verdict(
        self,
        completion: str,
        code: str,
        static: StaticResult,
        outcome: Outcome | None,
        reference: Outcome,
        plan_reference: str | None,
    ) -> Verdict:
        """decide, then the plan term on a PASS; a parser or decoder giving up on hostile output is a CRASH."""
        try:
            verdict = decide(
                static.checks,
                outcome if outcome is not None else {"trials": []},
                reference,
                self.speedup_cap,
                self.speedup_weight,
                static,
            )
            if verdict.status != Status.PASS or not isinstance(outcome, dict):
                return verdict
            first = first_by_trial(outcome.get("trials", []), CandidateTrial.parse).get(0)
            plan = plan_score(completion, code, list(first.launches) if first else None, plan_reference)
        except (RecursionError, MemoryError) as err:
            return Verdict(0.0, Status.CRASH, dict(ZERO), {"reason": f"scoring gave up: {type(err).__name__}"})
        return dataclasses.replace(
            verdict, reward=verdict.reward + self.plan_weight * plan, components={**verdict.components, "plan": plan}
        )

    def close(self) -> None:
        self.sandbox.close()
        self.reference_sandbox.close()
