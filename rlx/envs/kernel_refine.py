"""env=kernel_refine: Kevin-style kernel refinement (cognition.ai/blog/kevin-32b; docs/MULTITURN section 3). The
model writes a Triton kernel, reward=triton scores it, and what a developer would see comes back:

    FORMAT     the code does not parse / defines no ModelNew
    VIOLATION  the check it failed and why (a refused call, an out-of-bounds access, torch compute in forward)
    CRASH      what forward raised (or how the session ended, with the tail of its output)
    FAIL       the mismatch summary (dtype, shape, non-finite values, max abs error against the tolerance)
    PASS       on a GPU with `refine_correct`: its speedup over the PyTorch reference, then "make it faster"

followed by `fix_instruction` (or `speed_instruction` after a correct kernel). Nothing of the reference's secret
trial inputs or outputs is in any of these (reward=triton never puts them in a verdict).

On CPU there is no speed signal: kernels run under TRITON_INTERPRET=1 and reward=triton reports the speedup as
unavailable, never estimated, so a correct kernel ends the episode there (there is nothing to improve against).
On a GPU, with `refine_correct: true`, a correct kernel's speedup comes back and the episode goes on to
`max_turns` (Kevin's loop); with false it ends at the first correct kernel, as on CPU.
"""

from __future__ import annotations

from rlx import syntax
from rlx.envs.feedback import FeedbackEnv, one_line
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status, Verdict
from rlx.rewards.triton.reward import TritonReward
from rlx.rewards.unit_tests import extract_code

LINE = 200  # an error, a reason or a refused call, per line


def syntax_error(completion: str) -> str:
    """Python's complaint about the code reward=triton would run (the completion's last fenced block, else all of
    it), as the compiler says it, with the line in the model's own code; parsing only, nothing runs (the reward's
    static check parses it in this process too)."""
    code = extract_code(completion)
    try:
        syntax.parse(code)
    except SyntaxError as err:
        where = f" (line {err.lineno})" if err.lineno else ""
        return f"SyntaxError: {one_line(err.msg, LINE)}{where}"
    except (ValueError, RecursionError, MemoryError) as err:  # NUL bytes; nesting the parser gives up on
        return f"{type(err).__name__}: {one_line(err, LINE)}"
    return ""


def speedup_of(verdict: Verdict) -> float | None:
    """The measured speedup (GPU), or None where reward=triton reports it unavailable (CPU) or never got there."""
    value = verdict.details.get("speedup")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class KernelRefineEnv(FeedbackEnv):
    def __init__(
        self,
        reward: Reward,
        max_turns: int,
        max_observation_chars: int,
        refine_correct: bool,
        fix_instruction: str,
        speed_instruction: str,
        observation_role: str | None = None,
    ) -> None:
        """reward: the run's reward=triton (passed by rlx.train: conf/env/kernel_refine.yaml is `_partial_: true`)."""
        super().__init__(reward, max_turns, max_observation_chars, observation_role)
        if not isinstance(reward, TritonReward):
            raise ConfigError(
                f"env=kernel_refine scores with reward=triton (got {type(reward).__name__}): set reward=triton"
            )
        self.refine_correct: bool = refine_correct
        self.fix_instruction: str = fix_instruction
        self.speed_instruction: str = speed_instruction

    def done(self, verdict: Verdict) -> bool:
        """INFRA ends it; a PASS ends it unless there is a speed to improve on (GPU, refine_correct)."""
        if verdict.status == Status.PASS:
            return not (self.refine_correct and speedup_of(verdict) is not None)
        return verdict.status == Status.INFRA

    def describe(self, verdict: Verdict, row: dict, completion: str) -> str:
        details, status = verdict.details, verdict.status
        found = details.get("checks")
        checks: dict = found if isinstance(found, dict) else {}
        if status == Status.PASS:
            faster = f"{speedup_of(verdict):.2f}x the speed of the PyTorch reference"
            return f"\nCorrect: {faster}.\n{self.speed_instruction}\n"
        if status == Status.FORMAT and not checks.get("parses", True):
            lines = [f"The code does not parse: {syntax_error(completion) or 'not Python'}."]
        elif status == Status.FORMAT and not checks.get("defines_model_new", True):
            lines = ["The code defines no class ModelNew."]
        elif status == Status.FAIL:
            mismatch = [one_line(m, LINE) for m in details.get("mismatch") or []]
            lines = [f"Wrong output on {len(mismatch)} trial(s): " + "; ".join(dict.fromkeys(mismatch))]
        else:
            why = one_line(details.get("reason", status.value), LINE)
            lines = [f"The kernel was not accepted ({status.value}): {why}"]
            failed = [k for k, ok in checks.items() if ok is False and k not in ("correct", "compiled")]
            if failed and status == Status.VIOLATION:
                lines.append("Failed checks: " + ", ".join(failed))
        for key, label in (
            ("errors", "forward raised"),
            ("refused", "refused torch calls"),
            ("out_of_bounds", "out-of-bounds accesses"),
            ("foreign_kernels", "launched kernels the program does not define"),
        ):
            found = [one_line(e, LINE) for e in details.get(key) or [] if e]
            if found:
                lines.append(f"{label}: " + "; ".join(dict.fromkeys(found)))
        if details.get("output"):
            lines.append(f"returned: {one_line(details['output'], LINE)}")
        if details.get("output_tail"):
            lines.append(f"Its output ended with: {one_line(details['output_tail'], LINE)}")
        lines.append(self.fix_instruction)
        return "\n" + "\n".join(lines) + "\n"
