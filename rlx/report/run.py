"""One run's report: reward, KL and length vs step (reward.png, kl.png, length.png) and a short report.md in
the run directory, written when training ends (`finish_run`, called by rlx.train) or by hand:

    python -m rlx.report outputs/<date>/<time>

`finish_run` also writes footprint.json: the training state's bytes (weights, gradients and optimiser state of
every model the run holds: policy, critic, frozen reference) and the directory the starting policy was loaded
from (the reference a KL to the start is measured against). It never fails the run it reports on.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path

from rlx.report.plots import plot_run
from rlx.report.runs import FOOTPRINT_FILE, Run, load_run

log = logging.getLogger(__name__)


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def training_state_bytes(module, optimizers) -> dict[str, int]:
    """Bytes of the training state, by part: each model's weights (policy, critic, frozen reference), one
    gradient per trained parameter (what backward holds at its peak) and each optimiser's real state
    (AdamW: two moments per parameter). `optimizers`: the policy's, then the critic's when there is one."""
    # deferred: torch only to size optimizer state; reports of finished runs load without torch
    import torch

    out = {
        "policy_weights": tensor_bytes(module.policy.parameters()),
        "critic_weights": tensor_bytes(module.critic.parameters()) if module.critic is not None else 0,
        "reference_weights": 0,
    }
    if module.reference is not None:  # only what the reference does not share with the policy (LoRA shares all)
        own = {p.data_ptr() for p in module.policy.parameters()}
        with module.reference.forward_model() as ref:
            out["reference_weights"] = tensor_bytes(p for p in ref.parameters() if p.data_ptr() not in own)
    out["policy_gradients"] = out["policy_weights"]
    out["critic_gradients"] = out["critic_weights"]
    for name, opt in zip(("policy", "critic"), optimizers, strict=False):  # no critic: one optimiser
        out[f"{name}_optimizer"] = tensor_bytes(
            v for state in opt.state.values() for v in state.values() if torch.is_tensor(v) and v.dim() > 0
        )
    out.setdefault("critic_optimizer", 0)
    out["critic_total"] = out["critic_weights"] + out["critic_gradients"] + out["critic_optimizer"]
    out["total"] = sum(v for k, v in out.items() if k != "critic_total")
    return out


def finish_run(run_dir: str | Path, module=None, trainer=None) -> None:
    """At the end of training: footprint.json (when given the module and trainer), then the run's plots and
    report.md. Logs a warning instead of raising: the run's results are already saved."""
    run_dir = Path(run_dir)
    try:
        if module is not None and trainer is not None:
            footprint = {
                "state_bytes": training_state_bytes(module, trainer.optimizers),
                "start_model": str(getattr(module.policy.config, "_name_or_path", "") or ""),
            }
            (run_dir / FOOTPRINT_FILE).write_text(json.dumps(footprint, indent=2))
        write_run_report(run_dir)
    except Exception:  # noqa: BLE001 — a broken plot must not turn a finished run into a failed one
        log.warning("could not write the run report in %s:\n%s", run_dir, traceback.format_exc())


def _fmt(x, digits=3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def markdown(run: Run, pngs: list[str]) -> str:
    s = run.summary
    before, after = run.held_out("before"), run.held_out("after")
    lines = [f"# Run `{run.job_dir}`", ""]
    if run.overrides:
        lines += [f"Overrides: `{' '.join(run.overrides)}`", ""]
    header = (
        "| held-out acc before | after | reward (final) | KL to the reference (final) | approx-KL to the "
        "sampling policy (mean) | length (final) | steps | wall s |"
    )
    row = (
        f"| {_fmt(before)} | {_fmt(after)} | {_fmt(run.final('reward/mean'))} | {_fmt(run.final('loss/kl'), 4)} | "
        f"{_fmt(run.mean('loss/approx_kl'), 5)} | {_fmt(run.final('rollout/length_mean'), 1)} | "
        f"{s.get('steps', '—')} | {s.get('wall_s', '—')} |"
    )
    lines += [header, "|---|---|---|---|---|---|---|---|", row]
    for key, why in run.inert.items():
        lines += ["", f"**Inert**: `{key}` could not change anything in this run: {why}"]
    footnote = (
        "Final = mean of the last 10% of logged steps in metrics.csv; held-out accuracy from summary.json "
        "(greedy decoding on the validation split, before and after RL)."
    )
    lines += ["", *[f"![{Path(p).stem}]({p})" for p in pngs], "", footnote, ""]
    return "\n".join(lines)


def write_run_report(run_dir: str | Path) -> Path:
    """reward.png, kl.png, length.png and report.md in `run_dir`. Returns report.md's path."""
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    pngs = plot_run(run, run_dir) if run.metrics else []
    path = run_dir / "report.md"
    path.write_text(markdown(run, pngs))
    return path
