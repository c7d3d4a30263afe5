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
                  L2 flushed; each timed forward on its own copy of the first trial's inputs, but three, drawn
                  as they come, on the reference's timing draw (values no trial had), their outputs compared
                  here (a wrong one fails `correct`: a kept output copied out by a kernel earns nothing); on
                  CPU kernels run under TRITON_INTERPRET=1 and speed is reported as unavailable (None), never
                  estimated.
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
from rlx.rewards.sandbox.session import Limits, Sandbox, Session
from rlx.rewards.triton.plan import plan_score
from rlx.rewards.triton.records import CandidateTrial, first_by_trial
from rlx.rewards.triton.static import StaticResult, static_checks, task_names
from rlx.rewards.triton.verdict import ZERO, Outcome, decide, reference_trials, timing_draw
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
        seed = secrets.randbelow(2**31 - 1000 * (trials + 1)) if seed is None else seed
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
        if self.device != "cuda":
            return {"trials": trials, "timing": None}
        timing = session.request({"op": "time", "seed": seeds[0], "repeats": self.time_repeats})[0]
        # the timing draw: inputs no trial has, given to some of the candidate's timed forwards to check them
        timed = session.request({"op": "draw", "trial": self.trials, "seed": self.seed + 1000 * self.trials})[0]
        return {"trials": trials, "timing": timing, "timed": timed}

    def _candidate_check(self, task: str, inputs: list[list[dict]], check_inputs: list[dict]):
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
                message = {"op": "time", "inputs": inputs[0], "check": check_inputs, "repeats": self.time_repeats}
                timing = session.request(message)[0]
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
        runnable: list[tuple[int, list[list[dict]], list[dict]]] = []
        for i, (checks, *_) in enumerate(statics):
            expected = reference_trials(references[keys[i]])
            if all(checks.values()) and not isinstance(expected, str):
                runnable.append(
                    (i, [list(expected[t].inputs) for t in sorted(expected)], timing_draw(references[keys[i]]))
                )
        checks_by = [self._candidate_check(rows[i]["source"], inputs, draw) for i, inputs, draw in runnable]
        fresh = self.sandbox.map([codes[i] for i, *_ in runnable], lambda session, j: checks_by[j](session, j))
        outcomes = {i: outcome for (i, *_), outcome in zip(runnable, fresh, strict=True)}
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
