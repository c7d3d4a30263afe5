"""reward=triton: a KernelBench-format task (`source`: Model, get_inputs, get_init_inputs) and a completion
that defines `ModelNew` launching @triton.jit kernels. An optional row field `preamble` (imports the prompt
already showed, see data=kernels) is prepended to the completion.

Checks, each with its own label in `details["checks"]`:
  parses, defines_model_new, defines_jit_kernel   static, in this process (FORMAT / VIOLATION);
  launched        every trial launched at least one Triton kernel (counted at runtime, not by regex);
  no_fallback     no torch compute inside ModelNew.forward (allow-list TorchFunctionMode);
  in_bounds, inputs_unchanged   canary padding around every buffer, inputs compared after the call;
  correct         all seeded trials match the reference run (separate sandbox run, cached): exact dtype and
                  shape, finite, KernelBench atol = rtol (1e-4 fp32, 1e-2 fp16/bf16); the seeds are secret
                  (drawn per reward) unless `seed` is set;
  speedup         GPU only: reference and candidate timed by the harness with CUDA events after warm-up,
                  L2 flushed; on CPU kernels run under TRITON_INTERPRET=1 and speed is reported as
                  unavailable (None), never estimated.
  plan            the completion's `# plan:` line agrees with its code and with the row's reference plan
                  (rlx.rewards.triton.plan; static, outside the sandbox).
Reward = valid × (correct + speedup_weight · min(speedup, speedup_cap)) + plan_weight · plan, the speedup term
only when correct and measured. Components: valid, compiled (forward ran without raising), correct, fast_1
(correct and faster than torch; 0 where unmeasured), plan. An INFRA verdict carries no components.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import secrets

from rlx.rewards.base import Status, Verdict
from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.pool import SandboxPool
from rlx.rewards.sandbox.records import RunResult, Timing, Trial
from rlx.rewards.triton.plan import plan_score
from rlx.rewards.triton.tensors import compare
from rlx.rewards.unit_tests import extract_code
from rlx.rewards.verdicts import run_status

HARNESS = "rlx.rewards.triton.harness:run"


def static_checks(code: str) -> dict[str, bool]:
    checks = {"parses": False, "defines_model_new": False, "defines_jit_kernel": False}
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return checks
    checks["parses"] = True
    checks["defines_model_new"] = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(target) in ("triton.jit", "jit"):
                    checks["defines_jit_kernel"] = True
    return checks


def trial_records(result: RunResult) -> dict[int, Trial]:
    """The first well-formed record of each trial index in the harness's sealed block (a later, or malformed,
    one for the same index is ignored; lines the candidate wrote itself never reach `result.records`)."""
    found: dict[int, Trial] = {}
    for trial in map(Trial.parse, result.records):
        if trial is not None and trial.trial not in found:
            found[trial.trial] = trial
    return found


def decide(checks: dict, result: RunResult, reference: RunResult, speedup_cap: float, speedup_weight: float) -> Verdict:
    """Verdict from static checks, the candidate's sandbox result and the reference run's result."""
    zero = {"valid": 0.0, "compiled": 0.0, "correct": 0.0, "fast_1": 0.0}
    if not (checks["parses"] and checks["defines_model_new"]):
        return Verdict(0.0, Status.FORMAT, zero, {"checks": checks})
    if not checks["defines_jit_kernel"]:
        return Verdict(0.0, Status.VIOLATION, zero, {"checks": checks, "reason": "no @triton.jit kernel"})
    status, why = run_status(reference)
    expected = {t: r.output for t, r in trial_records(reference).items() if r.output is not None}
    if status is None and len(expected) < len(trial_records(reference)):
        status, why = Status.INFRA, "its forward returned no tensor"
    if status is not None or not expected:
        return Verdict(0.0, Status.INFRA, {}, {"checks": checks, "reason": f"reference run failed: {why}"})
    status, why = run_status(result)
    base = {"wall_s": result.wall_s, "output_tail": result.output_tail}
    if status is not None:
        return Verdict(0.0, status, zero, {**base, "checks": checks, "reason": why})
    found = trial_records(result)
    got = [found.get(t) for t in sorted(expected)]  # None: the trial left no record
    errors = [r.error if r else None for r in got if r is None or r.error]
    comparisons = [
        compare(r.output, expected[t]) if r and r.output else (False, "")
        for t, r in zip(sorted(expected), got, strict=True)
    ]
    checks = {
        **checks,
        "launched": all(r is not None and r.launches > 0 for r in got),
        "no_fallback": not any(r is not None and r.refused for r in got),
        "in_bounds": all(r is not None and r.canaries_ok for r in got),
        "inputs_unchanged": all(r is not None and r.inputs_unchanged for r in got),
        "compiled": not errors,
        "correct": all(ok for ok, _ in comparisons),
    }
    details = {
        **base,
        "checks": checks,
        "errors": errors[:3],
        "mismatch": [why for ok, why in comparisons if not ok][:3],
    }
    valid = all(checks[k] for k in ("launched", "no_fallback", "in_bounds", "inputs_unchanged"))
    speedup = _speedup(result, reference)
    details["speedup"] = speedup if speedup is not None else "unavailable (no GPU timing: CPU/TRITON_INTERPRET)"
    correct = float(checks["correct"] and checks["compiled"])
    components = {
        "valid": float(valid),
        "compiled": float(checks["compiled"]),
        "correct": correct * valid,
        "fast_1": float(bool(valid and correct and speedup is not None and speedup > 1.0)),
    }
    if not checks["compiled"] and checks["no_fallback"]:
        return Verdict(0.0, Status.CRASH, {**components, "valid": 0.0}, {**details, "reason": "forward raised"})
    if not valid:
        failed = [k for k in ("launched", "no_fallback", "in_bounds", "inputs_unchanged") if not checks[k]]
        return Verdict(0.0, Status.VIOLATION, {**components, "correct": 0.0}, {**details, "reason": f"failed {failed}"})
    if not correct:
        return Verdict(0.0, Status.FAIL, components, details)
    term = speedup_weight * min(speedup, speedup_cap) if speedup is not None else 0.0
    return Verdict(1.0 + term, Status.PASS, components, details)


def _speedup(result: RunResult, reference: RunResult) -> float | None:
    """Reference ms / candidate ms from the harness's timing records (GPU only); None where either is missing,
    broke, or the candidate made a refused torch call while it was timed."""

    def ms(res: RunResult, candidate: bool) -> float | None:
        found = [r for r in res.records if r.get("event") == "timing"]
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
        # a seed the candidate can guess lets it compute the reference's answers at load time, where torch is
        # not guarded, and return them from forward: null draws one per reward, kept out of the sandbox
        # except as the trials' seeds, which the guard keeps out of its reach (rlx.rewards.sandbox.guard)
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

    def _payload(self, source: str, mode: str, candidate: str) -> dict:
        return {
            "source": source,
            "mode": mode,
            "candidate": candidate,
            "device": self.device,
            "seeds": [self.seed + 1000 * t for t in range(self.trials)],
            "init_seed": self.seed,
            "time": self.device == "cuda",
            "time_repeats": self.time_repeats,
        }

    def _references_for(self, sources: list[str]) -> dict[str, RunResult]:
        """Reference results by source hash; clean runs are cached for the rest of training."""
        keys = {hashlib.sha256(s.encode()).hexdigest(): s for s in sources}
        missing = sorted(k for k in keys if k not in self._references)
        fresh = self.pool.run([(HARNESS, self._payload(keys[k], "reference", ""), self.limits) for k in missing])
        found = {k: self._references[k] for k in keys if k in self._references}
        for key, result in zip(missing, fresh, strict=True):
            found[key] = result
            if run_status(result)[0] is None:
                self._references[key] = result
        return found

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        references = self._references_for([row["source"] for row in rows])
        codes = [row.get("preamble", "") + extract_code(c) for c, row in zip(completions, rows, strict=True)]
        checks = [static_checks(code) for code in codes]
        runnable = [i for i, c in enumerate(checks) if all(c.values())]
        results = dict(
            zip(
                runnable,
                self.pool.run(
                    [(HARNESS, self._payload(rows[i]["source"], "candidate", codes[i]), self.limits) for i in runnable]
                ),
                strict=True,
            )
        )
        verdicts = [
            decide(
                checks[i],
                results.get(i, RunResult.broken("not run")),
                references[hashlib.sha256(row["source"].encode()).hexdigest()],
                self.speedup_cap,
                self.speedup_weight,
            )
            for i, row in enumerate(rows)
        ]
        return [
            self._with_plan(v, completions[i], codes[i], results.get(i), row.get("plan"))
            for i, (v, row) in enumerate(zip(verdicts, rows, strict=True))
        ]

    def _with_plan(
        self, verdict: Verdict, completion: str, code: str, result: RunResult | None, reference: str | None
    ) -> Verdict:
        if verdict.status == Status.INFRA:
            return verdict
        first = trial_records(result).get(0) if result is not None else None
        plan = plan_score(completion, code, list(first.blocks) if first else None, reference)
        return dataclasses.replace(
            verdict, reward=verdict.reward + self.plan_weight * plan, components={**verdict.components, "plan": plan}
        )

    def close(self) -> None:
        self.pool.close()
