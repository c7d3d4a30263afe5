"""python -m rlx [group=option ...] [key=value ...]   (-m or +sweeps=NAME for a sweep; --help lists the groups)"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import hydra
from hydra import compose, initialize, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from rlx.cli import configs, implied
from rlx.cli.hydra_callbacks import FailedJob, RunDirBusy
from rlx.distributed.env import env_is_rank_zero
from rlx.errors import explain

log = logging.getLogger("rlx")


@hydra.main(
    version_base="1.3", config_path=None, config_name="config"
)  # configs come from rlx:// (see rlx.cli.configs)
def run(cfg: DictConfig) -> float | None:
    # deferred: kept out of --help's start-up (loaded once a run starts)
    from rlx.checks import check_optimizers
    from rlx.cli import status, stop
    from rlx.cli.preflight import build_inputs, check_config

    stop.reset()  # (a sweep's worker runs several jobs)
    stop.install()  # SIGTERM/SIGINT: one handler, acted on where nothing is lost, whatever the phase
    try:
        check_config(cfg)  # unset values, the step budget, a sweep started as one run: before any heavy import
        implied.announce(cfg)  # what a choice brought or set for another group (reward=triton: data=kernels, ...)
        status.enter("checks")
        inputs = build_inputs(cfg)  # data files, reward/data pairing, group size: before Lightning and transformers
        check_optimizers(inputs.algo, cfg.trainer.max_steps)  # lr < 0, betas outside [0, 1), ...: before the model
        log.info("%s: %d RL steps, run directory %s", run_description(), cfg.trainer.max_steps, cfg.run_dir)
        status.enter("imports")
        # deferred: kept out of --help's start-up (loaded once a run starts)
        from rlx.cli.logs import quiet_third_party
        from rlx.cli.ticker import heartbeat

        with heartbeat("loading torch, Lightning and transformers"):
            from rlx.train import train  # heavy imports after Hydra has parsed the command line and the checks

        quiet_third_party()
        summary = train(cfg, inputs)  # an error propagates: Hydra records the job as failed, main() reports it
    except SystemExit as stopped:  # a signal (rlx.cli.stop.Stopped, or the checkpoint callback's Interrupted)
        report_stop(cfg, stopped)
        raise
    before, after = summary["before"] or {}, summary["after"]
    print(
        f"\nheld-out accuracy: {before.get('val/accuracy', float('nan')):.3f} -> {after['val/accuracy']:.3f} "
        f"in {summary['wall_s']:.0f} s ({summary['steps']} RL step{'s' * (summary['steps'] != 1)})"
    )
    print(f"run directory:  {summary['run_dir']}")
    print(f"  summary.json  metrics: {summary['metrics_csv']}  samples: {summary['samples']}")
    print(f"  policy (save_pretrained): {summary['policy_dir']}  resume: ckpt_path={summary['checkpoint']}")
    return after["val/accuracy"]


def report_stop(cfg: DictConfig, stopped: SystemExit) -> None:
    """status.json says `stopped` (the phase, the signal, the step), and one line says so and how to go on; a
    `Stopped` then ends the process at once (rlx.cli.status.exit_now), the others unwind as a SystemExit."""
    # start-up time: status and stop pull in Lightning, which `--help` and config errors never need
    from rlx.cli import status, stop

    stop.record_only()  # a second signal must not cut these writes
    signum = stop.pending() or getattr(stopped, "signum", None)
    code = 128 + signum if signum else stopped.code
    step = getattr(stopped, "step", None)
    if env_is_rank_zero():  # every rank of trainer=ddp stops alike; one writes the run's status.json
        status.write_stopped(cfg.run_dir, code, step)
    if signum:
        checkpoint = Path(str(cfg.checkpoint.dirpath)) / "last.ckpt"
        where = f"after step {step}" if step is not None else f"during {status.phase()}"
        then = (
            f"checkpoint {checkpoint}: resume with ckpt_path=last"
            if checkpoint.is_file()
            else "no checkpoint yet: run the command again to start over"
        )
        print(f"rlx: stopped by {stop.name(signum)} {where}; {then}", file=sys.stderr, flush=True)
    if isinstance(stopped, stop.Stopped):
        status.exit_now(code)  # the phase has unwound; skip the interpreter's slow teardown
    if code != stopped.code:
        raise SystemExit(code) from None


def run_description() -> str:
    """`algo=grpo reward=math data=arithmetic model=tiny`: the groups that say what this run is."""
    choices = HydraConfig.get().runtime.choices
    return " ".join(f"{g}={choices[g]}" for g in ("algo", "reward", "data", "model") if choices.get(g))


def hydra_arguments(argv: list[str]) -> argparse.Namespace:
    """The parts of Hydra's command line a did-you-mean needs (its overrides, --config-dir, --config-name);
    Hydra's other flags (-m, --cfg ...) are passed over."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--config-dir", "-cd")
    parser.add_argument("--config-name", "-cn")
    parser.add_argument("--config-path", "-cp")
    args, _ = parser.parse_known_args(argv)
    return args


def compose_without(key: str):
    """The config this command line composes without its override of `key` (for a did-you-mean), or None."""
    args = hydra_arguments(sys.argv[1:])
    bare = key.lstrip("+~")
    rest = [o for o in args.overrides if o.split("=", 1)[0].lstrip("+~") != bare and "," not in o]
    GlobalHydra.instance().clear()
    try:
        if args.config_dir:
            context = initialize_config_dir(config_dir=os.path.abspath(args.config_dir), version_base="1.3")
        else:
            context = initialize(config_path=None, version_base="1.3")
        with context:
            return compose(args.config_name or "config", overrides=rest)
    except Exception:  # noqa: BLE001 — another bad override: the message goes without a suggestion
        return None


def main() -> None:
    """Hydra parses and composes; every bad input ends in one `rlx: error: ...` line and exit status 1."""
    debug = os.environ.get("RLX_DEBUG", "0") not in ("", "0") or os.environ.get("HYDRA_FULL_ERROR") == "1"
    configs.register()
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing its own report (rlx prints one)
    try:
        run()
    except RunDirBusy as busy:  # before Hydra wrote anything into the directory another process holds
        print(f"rlx: error: {busy.message}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    except Exception as err:
        message = None if debug else explain(err, compose=compose_without)
        if FailedJob.first is not None and not debug:  # a sweep's job: its traceback is in its status.json
            message = FailedJob.first.describe(message or first_line(err))
        if message is None:
            raise  # RLX_DEBUG=1, or a bug: the traceback is what helps
        sys.stdout.flush()
        print(f"rlx: error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    finally:
        FailedJob.restore_stderr()


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


if __name__ == "__main__":
    main()
