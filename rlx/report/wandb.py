"""Weights & Biases for rlx: the logger (conf/logger/wandb.yaml) and the sweep's W&B Report.

Logger (`RlxWandbLogger`, Lightning's WandbLogger with rlx's defaults):
- mode `auto`: online when an API key is set (WANDB_API_KEY, `wandb login`'s ~/.netrc entry), else offline —
  no key and no network needed; the run lands in `<run_dir>/wandb/offline-run-*` and `wandb sync` uploads it
  later. WANDB_MODE, when set, wins.
- in a multirun every job joins one group named after the sweep (`rlx.report.runs.sweep_name`) and logs as
  config: the resolved rlx config (so `algo.epsilon` is a config key), the group choices (`choices.algo`),
  and `sweep.keys` / `sweep.overrides`: the overrides that differ between the sweep's runs.
- sample completions (samples.jsonl) are logged as a `samples` table whenever new ones were written.
The CSV logger stays on next to it (`loggers(...)`), so metrics.csv and the local sweep report are the same
with or without W&B.
"""

from __future__ import annotations

import functools
import json
import logging
import netrc
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lightning.pytorch.loggers import WandbLogger

from rlx.report.runs import SWEEP_FILE, differing_keys, load_sweep, split_override, sweep_name

log = logging.getLogger(__name__)

SAMPLE_COLUMNS = ["step", "prompt", "completion", "reward", "status"]


def loggers(*args: Any, **named: Any) -> list:
    """`_target_` for a list of loggers: Trainer(logger=[...]) logs to all; the first one's log_dir is the run's."""
    return [*args, *named.values()]


def has_api_key() -> bool:
    """A W&B key is configured without asking the network: env var, identity token, or ~/.netrc entry."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    try:
        return netrc.netrc(os.environ.get("NETRC")).authenticators(api_host()[0]) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def api_host() -> tuple[str, int]:
    url = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai"))
    return url.hostname or "api.wandb.ai", url.port or (80 if url.scheme == "http" else 443)


def reachable(timeout: float = 3.0) -> bool:
    """The W&B server accepts a TCP connection (a key without a network must not stall a run in wandb.init)."""
    try:
        with socket.create_connection(api_host(), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_mode(mode: str) -> str:
    """`auto` → online with a key and a reachable server, else offline. WANDB_MODE, when set, wins."""
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    if mode == "auto":
        if not has_api_key():
            return "offline"
        if not reachable():
            log.warning("W&B: an API key is set but %s:%d is unreachable: logging offline", *api_host())
            return "offline"
        return "online"
    return mode


def _hydra_context() -> dict:
    """Group, sweep keys and resolved config of the current Hydra job ({} outside Hydra)."""
    # deferred: hydra only inside a Hydra run; reports of finished sweeps load without it
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    if not HydraConfig.initialized():
        return {}
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    ctx: dict = {
        "choices": {k: v for k, v in hc.runtime.choices.items() if not k.startswith("hydra/") and v is not None}
    }
    job_cfg = out_dir / hc.output_subdir / "config.yaml" if hc.output_subdir else None
    if job_cfg is not None and job_cfg.is_file():
        try:
            ctx["config"] = OmegaConf.to_container(OmegaConf.load(job_cfg), resolve=True)
        except Exception:  # noqa: BLE001 — an unresolvable key (e.g. a missing env var): log it unresolved
            ctx["config"] = OmegaConf.to_container(OmegaConf.load(job_cfg), resolve=False)
    if hc.mode == RunMode.MULTIRUN:
        sweep_dir = Path(str(hc.sweep.dir))
        swept = (
            json.loads((sweep_dir / SWEEP_FILE).read_text()).get("swept")
            if (sweep_dir / SWEEP_FILE).is_file()
            else None
        )
        overrides = [str(o) for o in hc.overrides.task]
        # without the sweep-report callback's sweep.json the job cannot tell swept from fixed: keep them all
        mine = [o for o in overrides if swept is None or split_override(o)[0] in swept]
        ctx["group"] = sweep_name(sweep_dir)
        ctx["sweep"] = {
            "name": ctx["group"],
            "keys": [split_override(o)[0] for o in mine],
            "overrides": " ".join(mine),
            "job": int(hc.job.num),
        }
        ctx["name"] = " ".join(mine) or None
    return ctx


class RlxWandbLogger(WandbLogger):
    """Lightning's WandbLogger with rlx's choices (see the module docstring); the values are conf/logger/wandb.yaml's.
    No open-ended kwargs: a key the YAML or the command line adds fails at start instead of reaching wandb.init."""

    def __init__(
        self,
        project: str,
        entity: str | None,
        mode: str,
        save_dir: str,
        group: str | None,
        name: str | None,
        tags: list[str],
        log_samples: bool,
        log_model: bool,
    ) -> None:
        # deferred (start-up time): wandb loads only when a W&B run is open
        import wandb

        if wandb.run is not None:  # a previous job of this process (basic launcher) left its run open
            wandb.finish()
        ctx = _hydra_context()
        self.rlx_mode = resolve_mode(mode)
        config = {**ctx.get("config", {}), "choices": ctx.get("choices", {})}
        if "sweep" in ctx:
            config["sweep"] = ctx["sweep"]
        Path(save_dir).mkdir(parents=True, exist_ok=True)
        super().__init__(
            project=project,
            entity=entity,
            save_dir=save_dir,
            mode=self.rlx_mode,
            group=group or ctx.get("group"),
            name=name or ctx.get("name"),
            tags=list(tags),
            config=config,
            log_model=log_model,
        )
        self.log_samples = log_samples
        self._samples_logged = 0
        if self.rlx_mode == "offline":
            log.info("W&B: no API key, logging offline to %s/wandb (upload later with `wandb sync`)", save_dir)

    def finalize(self, status: str) -> None:
        """Called after every fit/validate: log the samples written since the last call as a table."""
        if self.log_samples:
            self._log_sample_table()
        super().finalize(status)

    def _log_sample_table(self) -> None:
        path = Path(self.save_dir or ".") / "samples.jsonl"
        if not path.is_file():
            return
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if len(rows) <= self._samples_logged:
            return
        self._samples_logged = len(rows)
        data = [[r.get(c) for c in SAMPLE_COLUMNS] for r in rows]
        self.log_table(key="samples", columns=SAMPLE_COLUMNS, data=data)


def run_url() -> str | None:
    """The open W&B run's page, when it logs online (None offline or without a run)."""
    # deferred (start-up time): wandb loads only when a W&B run is open
    import wandb

    run = wandb.run
    if run is None or getattr(run, "offline", False):
        return None
    return getattr(run, "url", None)


def finish_run(failed: bool) -> None:
    """Ends the process's W&B run (marked failed with exit code 1), if one is open."""
    # deferred (start-up time): wandb loads only when a W&B run is open
    import wandb

    if wandb.run is not None:
        wandb.finish(exit_code=1 if failed else 0)


# ------------------------------------------------------------------------------------------ the W&B Report
PANELS = [
    ("reward/mean", "reward"),
    ("loss/kl", "KL to the reference"),
    ("rollout/length_mean", "response length"),
    ("val/accuracy", "held-out accuracy"),
]


def wandb_group_key(key: str, choices: dict) -> str:
    """An override key → the W&B runset group-by key: `algo.epsilon` → `config.algo.epsilon`, a group choice
    such as `algo` → `config.choices.algo`."""
    return f"config.choices.{key}" if key in choices else f"config.{key}"


def build_report(
    name: str, project: str, entity: str | None, keys: list[str], choices: dict, table_md: str = "", command: str = ""
):
    """The W&B Report (wandb_workspaces) comparing the sweep's group; built offline, saved by the caller."""
    # deferred (start-up time): wandb_workspaces loads only to write a W&B report
    import wandb_workspaces.reports.v2 as wr
    from wandb_workspaces.reports.v2.interface import BlockTypes, PanelTypes

    runset = wr.Runset(
        project=project,
        entity=entity or "",
        name=name,
        filters=f"Group = '{name}'",
        groupby=[wandb_group_key(k, choices) for k in keys],
    )
    panels: list[PanelTypes] = [wr.LinePlot(title=title, x="Step", y=[metric]) for metric, title in PANELS]
    blocks: list[BlockTypes] = [
        wr.H1(text=f"rlx sweep {name}"),
        wr.P(text=f"Swept: {', '.join(keys) or '(nothing)'}. Command: {command}"),
        wr.PanelGrid(runsets=[runset], panels=panels),
    ]
    if table_md:
        blocks.append(wr.MarkdownBlock(text=table_md))
    report = functools.partial(
        wr.Report,
        project=project,
        title=f"rlx sweep {name}",
        description=f"Runs of the W&B group {name}",
        blocks=blocks,
    )
    return report(entity=entity) if entity else report()  # no entity: the library's own default


def report_sections(report_md: str) -> str:
    """What the W&B Report shows of report.md: its sections from the first `## ` heading on (per
    configuration, paired comparisons, per run, provenance), the images left out (the panels draw the curves)."""
    start = report_md.find("\n## ")
    body = report_md[start + 1 :] if start >= 0 else report_md
    return "\n".join(line for line in body.splitlines() if not line.startswith("!["))


def report_sweep(sweep_dir: str | Path, runs: list | None = None, force_online: bool = False) -> str | None:
    """Creates the W&B Report for a sweep whose runs went to W&B. Returns one line saying what happened
    (None when no run used W&B). Never raises: the local report is the one that must exist.
    `force_online`: try even when the runs were logged offline (they have been `wandb sync`ed since)."""
    # deferred: omegaconf only to read the sweep's configs; the module imports no Hydra stack at top
    from omegaconf import OmegaConf

    sweep_dir = Path(sweep_dir)
    info, loaded = load_sweep(sweep_dir)
    runs = runs if runs is not None else loaded
    wandb_dirs = [d for r in runs for d in (r.job_dir / "wandb").glob("*run-*") if d.is_dir()]
    if not wandb_dirs:
        return None
    name = info.get("name") or sweep_name(sweep_dir)
    if not force_online and all(d.name.startswith("offline-run-") for d in wandb_dirs):
        return (
            f"W&B report not created: the runs were logged offline (no API key). Upload them with "
            f"`wandb sync {sweep_dir}/*/wandb/offline-run-*`, then `python -m rlx.report --wandb {sweep_dir}`."
        )
    if not has_api_key():
        return (
            "W&B report not created: no API key (set WANDB_API_KEY or `wandb login`; "
            f"the runs are in W&B group {name!r})."
        )
    if not reachable():
        return (
            f"W&B report not created: {api_host()[0]} is unreachable; "
            f"rerun `python -m rlx.report --wandb {sweep_dir}` later."
        )
    try:
        # probe: is the wandb-workspaces package importable
        import wandb_workspaces  # noqa: F401
    except ImportError:
        return (
            f"W&B report not created: `pip install wandb-workspaces` to build it (the runs are in W&B group {name!r})."
        )
    try:
        job_cfg = OmegaConf.load(runs[0].job_dir / ".hydra" / "config.yaml")
        # the run's own W&B project and entity, as its logger was configured ("rlx" when it named none)
        project = OmegaConf.select(job_cfg, "logger.wandb.project", default=None) or "rlx"
        entity = OmegaConf.select(job_cfg, "logger.wandb.entity", default=None)
        hydra_cfg = OmegaConf.load(runs[0].job_dir / ".hydra" / "hydra.yaml")
        choices = dict(OmegaConf.select(hydra_cfg, "hydra.runtime.choices", default={}) or {})
        keys = differing_keys(runs, info.get("swept", []))
        text = (sweep_dir / "report.md").read_text() if (sweep_dir / "report.md").is_file() else ""
        table = report_sections(text)
        report = build_report(name, project, entity, keys, choices, table, info.get("command", ""))
        report.save()
        return f"W&B report: {report.url}"
    except Exception as err:  # noqa: BLE001 — no network, no permission, API change: say so in one line
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return f"W&B report not created ({type(err).__name__}: {first}); the local report is in {sweep_dir}."
