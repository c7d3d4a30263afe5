"""reward=triton: a KernelBench-format task (`source`: Model, get_inputs, get_init_inputs) and a completion
that defines `ModelNew` launching @triton.jit kernels. An optional row field `preamble` (imports the prompt
already showed, see data=kernels) is prepended to the completion.

Where each thing lives (issue 26: a verdict is computed where candidate code never runs):
  checker (here)      static checks, the comparison, the verdict, the plan;
  reference sandbox   only the task file: draws each trial's inputs from secret seeds (drawn per reward, or
                      `seed`) and runs Model on them; inputs and outputs come back as bytes (cached per task);
  candidate sandbox   the completion: gets the inputs as bytes (no seed, no generator), returns the bytes of
                      exactly a torch.Tensor per trial and the harness's in-process facts.
Checks, each with its own label in `details["checks"]`:
  parses, defines_model_new       static (FORMAT);
  defines_jit_kernel, loads_and_stores, vocabulary   static (VIOLATION): KernelBench/TritonRL's syntax checks
                  and the kernel vocabulary (rlx.rewards.triton.static), which keeps candidate code away from
                  the in-process checks' state;
  launched        every trial launched a Triton kernel that stores (counted at runtime, not by regex);
  no_fallback     no torch compute inside ModelNew.forward (allow-list TorchFunctionMode);
  plain_output    forward returned exactly a torch.Tensor, not an input's memory, and left no torch mode on;
  in_bounds, inputs_unchanged   canary padding around every buffer, inputs compared after the call;
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

import ast
import dataclasses
import hashlib
import secrets

from rlx.rewards.base import Status, Verdict
from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.pool import SandboxPool
from rlx.rewards.sandbox.records import RunResult, Timing
from rlx.rewards.triton.plan import plan_score
from rlx.rewards.triton.records import CandidateTrial, ReferenceTrial, first_by_trial
from rlx.rewards.triton.static import is_kernel, memory_calls, static_checks, task_names
from rlx.rewards.triton.tensors import compare
from rlx.rewards.unit_tests import extract_code
from rlx.rewards.verdicts import run_status

HARNESS = "rlx.rewards.triton.harness:run"
# Public: the models' weights are initialised alike (KernelBench seeds both); the trial inputs do not come from
# it, nor from anything else in the candidate's process.
INIT_SEED = 0
RUNTIME_CHECKS = ("launched", "no_fallback", "plain_output", "in_bounds", "inputs_unchanged")
ZERO = {"valid": 0.0, "compiled": 0.0, "correct": 0.0, "fast_1": 0.0, "plan": 0.0}


def storing_kernels(code: str) -> set[str]:
    """Names of the @triton.jit functions that call tl.store (a launch of anything else computes nothing)."""
    try:
        tree = ast.parse(code)
        return {
            k.name
            for k in ast.walk(tree)
            if isinstance(k, ast.FunctionDef) and is_kernel(k) and "store" in memory_calls(k)
        }
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def reference_trials(reference: RunResult) -> dict[int, ReferenceTrial] | str:
    """The reference's trials with outputs, or why the reference run cannot be compared against."""
    status, why = run_status(reference)
    if status is not None:
        return why
    found = first_by_trial(reference.records, ReferenceTrial.parse)
    if not found or any(t.output is None for t in found.values()):
        return "its forward returned no tensor"
    return found


def decide(
    checks: dict,
    result: RunResult,
    reference: RunResult,
    speedup_cap: float,
    speedup_weight: float,
    storing: set[str] | None = None,
    refused_word: str = "",
) -> Verdict:
    """Verdict from static checks, the candidate's sandbox result and the reference run's result (no plan:
    TritonReward adds it to a PASS). `storing`: the kernels that call tl.store (None: any launch counts)."""
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
    status, why = run_status(result)
    base = {"wall_s": result.wall_s, "output_tail": result.output_tail}
    if status is not None:
        return Verdict(0.0, status, ZERO, {**base, "checks": checks, "reason": why})
    found = first_by_trial(result.records, CandidateTrial.parse)
    got = [found.get(t) for t in sorted(expected)]  # None: the trial left no record
    errors = [r.error if r else None for r in got if r is None or r.error]
    comparisons = [
        compare(r.output, expected[t].output or {}) if r and r.output else (False, "")
        for t, r in zip(sorted(expected), got, strict=True)
    ]

    def stores(r: CandidateTrial) -> bool:
        return storing is None or any(launch.kernel in storing for launch in r.launches)

    checks = {
        **checks,
        "launched": all(r is not None and r.launch_count > 0 and stores(r) for r in got),
        "no_fallback": not any(r is not None and r.refused for r in got),
        "plain_output": not any(r is not None and r.violation for r in got),
        "in_bounds": all(r is not None and r.canaries_ok for r in got),
        "inputs_unchanged": all(r is not None and r.inputs_unchanged for r in got),
        "compiled": not errors,
        "correct": all(ok for ok, _ in comparisons),
    }
    violations = [r.violation for r in got if r is not None and r.violation]
    details = {
        **base,
        "checks": checks,
        "errors": errors[:3],
        "mismatch": [why for ok, why in comparisons if not ok][:3],
        **({"output": violations[0]} if violations else {}),
    }
    valid = all(checks[k] for k in RUNTIME_CHECKS)
    speedup = _speedup(result, reference)
    details["speedup"] = speedup if speedup is not None else "unavailable (no GPU timing: CPU/TRITON_INTERPRET)"
    correct = float(checks["correct"] and checks["compiled"])
    components = {
        "valid": float(valid),
        "compiled": float(checks["compiled"]),
        "correct": correct * valid,
        "fast_1": float(bool(valid and correct and speedup is not None and speedup > 1.0)),
        "plan": 0.0,
    }
    if not checks["compiled"] and checks["no_fallback"] and checks["plain_output"]:
        return Verdict(0.0, Status.CRASH, {**components, "valid": 0.0}, {**details, "reason": "forward raised"})
    if not valid:
        failed = [k for k in RUNTIME_CHECKS if not checks[k]]
        return Verdict(0.0, Status.VIOLATION, {**components, "correct": 0.0}, {**details, "reason": f"failed {failed}"})
    if not correct:
        return Verdict(0.0, Status.FAIL, components, details)
    term = speedup_weight * min(speedup, speedup_cap) if speedup is not None else 0.0
    return Verdict(1.0 + term, Status.PASS, components, details)


def _speedup(result: RunResult, reference: RunResult) -> float | None:
    """Reference ms / candidate ms from the harness's timing records (GPU only); None where either is missing,
    broke, or the candidate made a refused torch call while it was timed."""

    def ms(res: RunResult, candidate: bool) -> float | None:
        found = [r for r in res.records if isinstance(r, dict) and r.get("event") == "timing"]
        timing = Timing.parse(found[0]) if found else None
        if timing is None or (candidate and timing.refused):
            return None
        return timing.ms

    new, ref = ms(result, True), ms(reference, False)
    return None if new is None or ref is None else ref / new


class TritonReward:
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
        hide: list[str],
        base_uid: int,
    ) -> None:
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"reward.device must be 'auto', 'cpu' or 'cuda' (got {device!r})")
        if device == "auto":  # the same command scores on a GPU machine and on a CPU-only one
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
        self.pool = SandboxPool(
            workers,
            preload=("torch", "triton", "numpy", HARNESS.split(":")[0]),
            env=env,
            hide=tuple(hide),
            base_uid=base_uid,
        )
        self._references: dict[str, RunResult] = {}

    def _payload(self, source: str, mode: str, candidate: str, inputs: list | None = None) -> dict:
        """A reference payload carries the trial seeds (only the task file runs there); a candidate payload the
        reference's inputs as bytes and nothing they were drawn from."""
        common = {
            "source": source,
            "mode": mode,
            "candidate": candidate,
            "device": self.device,
            "init_seed": INIT_SEED,
            "time": self.device == "cuda",
            "time_repeats": self.time_repeats,
        }
        if mode == "reference":
            return {**common, "seeds": [self.seed + 1000 * t for t in range(self.trials)]}
        return {**common, "inputs": inputs}

    def _references_for(self, sources: list[str]) -> dict[str, RunResult]:
        """Reference results by source hash; clean runs are cached for the rest of training."""
        keys = {hashlib.sha256(s.encode()).hexdigest(): s for s in sources}
        missing = sorted(k for k in keys if k not in self._references)
        fresh = self.pool.run([(HARNESS, self._payload(keys[k], "reference", ""), self.limits) for k in missing])
        found = {k: self._references[k] for k in keys if k in self._references}
        for key, result in zip(missing, fresh, strict=True):
            found[key] = result
            if not isinstance(reference_trials(result), str):
                self._references[key] = result
        return found

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        references = self._references_for([row["source"] for row in rows])
        keys = [hashlib.sha256(row["source"].encode()).hexdigest() for row in rows]
        codes = [row.get("preamble", "") + extract_code(c) for c, row in zip(completions, rows, strict=True)]
        statics = [static_checks(code, *task_names(row["source"])) for code, row in zip(codes, rows, strict=True)]
        runnable = []
        for i, (checks, _) in enumerate(statics):
            expected = reference_trials(references[keys[i]])
            if all(checks.values()) and not isinstance(expected, str):
                inputs = [list(expected[t].inputs) for t in sorted(expected)]
                runnable.append((i, self._payload(rows[i]["source"], "candidate", codes[i], inputs)))
        fresh = self.pool.run([(HARNESS, payload, self.limits) for _, payload in runnable])
        results = {i: result for (i, _), result in zip(runnable, fresh, strict=True)}
        return [
            self._verdict(completions[i], codes[i], statics[i], results.get(i), references[keys[i]], row.get("plan"))
            for i, row in enumerate(rows)
        ]

    def _verdict(
        self,
        completion: str,
        code: str,
        static: tuple[dict, str],
        result: RunResult | None,
        reference: RunResult,
        plan_reference: str | None,
    ) -> Verdict:
        """decide, then the plan term on a PASS; a parser or decoder giving up on hostile output is a CRASH."""
        checks, refused_word = static
        try:
            verdict = decide(
                checks,
                result if result is not None else RunResult.broken("not run"),
                reference,
                self.speedup_cap,
                self.speedup_weight,
                storing_kernels(code),
                refused_word,
            )
            if verdict.status != Status.PASS or result is None:
                return verdict
            first = first_by_trial(result.records, CandidateTrial.parse).get(0)
            plan = plan_score(completion, code, list(first.launches) if first else None, plan_reference)
        except (RecursionError, MemoryError) as err:
            return Verdict(0.0, Status.CRASH, dict(ZERO), {"reason": f"scoring gave up: {type(err).__name__}"})
        return dataclasses.replace(
            verdict, reward=verdict.reward + self.plan_weight * plan, components={**verdict.components, "plan": plan}
        )

    def close(self) -> None:
        self.pool.close()
