"""The commands of README.md, the docs pages (docs/**/*.md) and the measurements (bench/RESULTS-*.md), read
from their fenced code blocks, and the rules that shrink each to a one-step run.

A line of a fenced block is a command when it starts (after `VAR=value` assignments) with a program this
module knows; in a ```bash block every other non-comment line is an unknown command (a test fails on it), in
an untagged block it is text (sample output, a layout). `\\` continues a line, `&&` chains commands, `#`
starts a comment. Kinds and what the test does with each:

    run     python -m rlx ...            shrunk to one RL step (SHRINK, where the composed config has the key)
    info    python -m rlx --help | --cfg job ...   run as written (they print and exit)
    sweep   python -m rlx -m ... | +sweeps=NAME    the same per job, and at most two jobs (SWEEP_JOBS)
    compose a sweep on a launcher CI cannot reach (COMPOSE_ONLY): --cfg hydra must compose it
    score   python -m rlx.score ...      on a known-good row and completion for that reward (tests/e2e/fixtures)
    report  python -m rlx.report DIR     on a sweep directory the test session has made
    bench   python bench/NAME.py ...     with the arguments BENCH gives that script (none: the test fails)
    skip    installs and the test suite itself (SKIP, each with the reason)
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.conftest import FAST_MODEL, ONE_STEP, REPO, compose_config, output, run_cli
from tests.e2e.fixtures import write_jsonl, write_score_inputs

FENCE = re.compile(r"^```(\w*)\s*$")
PYTHON = re.compile(r"^(?:\S*/)?python3?$")
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")

# Every rlx run is shrunk with these (each only where the composed config has the key; they replace the
# README's own value for that key). Data-specific additions follow.
SHRINK = [*ONE_STEP, *FAST_MODEL, "samples_every=1"]
# data=kernels: the warm start of tests/e2e/test_cli.py's triton test (so the cached warm start is shared); the
# generated answers need the full data.max_new_tokens, so it is not cut.
KERNELS = ["model.warm_start.batch_size=4", "data.val_size=4"]
# data=kernelbench: the problem files tests/kernels write in KernelBench's layout (3 in level1), prompts as text
# (the tiny policy has no chat template)
KERNELBENCH = REPO / "tests" / "kernels" / "kernelbench"
KERNELBENCH_SHRINK = ["data.val_size=1", "data.chat=false"]
MAX_NEW_TOKENS = 64  # other tasks generating more than this are cut to it (e.g. data=jsonl's 512)
INFO_FLAGS = {"--help", "-h", "--hydra-help", "--cfg", "-c", "--info"}  # print and exit: run as written
PLACEHOLDERS = {"<s>": "0"}  # `seed=<s>` in a measured table's command
SWEEP_JOBS = 2  # the first swept key keeps two values, the others one
COMPOSE_ONLY = {"hydra/launcher=slurm": "CI has no SLURM cluster: the command must compose (--cfg hydra), not run"}
SKIP = {
    "install": (
        "installs rlx: tests/e2e/test_install.py installs it into a fresh venv; .ci/run runs the README's install"
    ),
    "pytest": "the test suite itself (CI runs it)",
}
# bench scripts: the arguments that make each a seconds-long smoke run. A README command for a script not
# listed here fails the test until a rule is added.
BENCH: dict[str, list[str]] = {
    "grpo_step.py": ["--sizes", "tiny", "--steps", "2", "--warmup", "1"],
    "rollout.py": ["--size", "tiny", "--batches", "16", "--new-tokens", "4", "--repeats", "1"],
    "scaling.py": [
        "--sweeps",
        "group",
        "--points",
        "2",
        "--steps",
        "2",
        "--prompts",
        "1",
        "--png",
        "{work}/scaling.png",
    ],
    "sandbox_throughput.py": [],
    "kernelbench.py": ["--kernelbench", str(KERNELBENCH), "--levels", "1", "2"],
    "staleness.py": ["--steps", "2", "--skip", "0", *FAST_MODEL],
    "staleness_report.py": ["{sweep}"],  # a finished sweep's directory: the shrunk eps_beta_g sweep's
    "token_class.py": [
        "--seeds",
        "0",
        "--out",
        "{work}/token_class",
        "--extra",
        *ONE_STEP,
        *FAST_MODEL,
        *KERNELS,
        "val_samples=2",
        "reward.seed=0",
    ],
    "memory.py": [
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--new-tokens",
        "4",
        "--hidden",
        "64",
        "--layers",
        "2",
        "--vocab",
        "2000",
        "--micro-batch",
        "2",
        "--generation-batch",
        "4",
        "--skip-unbatched-above",
        "0",
    ],
}


@dataclass
class Command:
    text: str  # as written (continuations joined)
    line: int  # line number in `source`
    argv: list[str] = field(default_factory=list)  # after the program (`-m rlx ...`, `bench/x.py ...`)
    env: dict[str, str] = field(default_factory=dict)
    kind: str = "unknown"
    reason: str = ""
    source: str = "README.md"  # the file it is shown in, relative to the repository root

    @property
    def where(self) -> str:
        return f"{self.source} line {self.line}"

    @property
    def id(self) -> str:
        return f"{self.source}:L{self.line}:{' '.join(self.argv)[:60]}"


def fenced_lines(text: str) -> list[tuple[str, int, str]]:
    """(block language, line number, logical line) for every line inside fenced code blocks."""
    out, lang, pending, start = [], None, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line.strip())
        if fence and lang is None:
            lang = fence.group(1)
            continue
        if fence and lang is not None:
            lang = None
            continue
        if lang is None:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((lang, start, pending + line))
        pending = ""
    return out


def classify(tokens: list[str], text: str, line: int) -> Command:
    env = {}
    while tokens and ENV_ASSIGNMENT.match(tokens[0]):
        key, _, value = tokens.pop(0).partition("=")
        env[key] = value
    cmd = Command(text=text, line=line, env=env)
    if not tokens:
        return cmd
    program, args = tokens[0], tokens[1:]
    cmd.argv = args
    if program.endswith("pip") or (PYTHON.match(program) and args[:2] in (["-m", "venv"], ["-m", "pip"])):
        cmd.kind, cmd.reason = "skip", SKIP["install"]
    elif PYTHON.match(program) and args[:2] == ["-m", "pytest"]:
        cmd.kind, cmd.reason = "skip", SKIP["pytest"]
    elif PYTHON.match(program) and args[:2] == ["-m", "rlx"] and set(args) & INFO_FLAGS:
        cmd.kind = "info"
    elif PYTHON.match(program) and args[:2] == ["-m", "rlx"]:
        rest = args[2:]
        sweep = any(a in ("-m", "--multirun") or re.match(r"^\+{0,2}sweeps=", a) for a in rest)
        cmd.kind = "sweep" if sweep else "run"
        for pattern, reason in COMPOSE_ONLY.items():
            if pattern in rest:
                cmd.kind, cmd.reason = "compose", reason
    elif PYTHON.match(program) and args[:2] == ["-m", "rlx.score"]:
        cmd.kind = "score"
    elif PYTHON.match(program) and args[:2] == ["-m", "rlx.report"]:
        cmd.kind = "report"
    elif PYTHON.match(program) and args and args[0].startswith("bench/"):
        cmd.kind = "bench"
    return cmd


def documented_files() -> list[Path]:
    """Every file whose commands a user reads: the README, the docs site's pages, the measurements."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "bench").glob("RESULTS-*.md"))]


def documented_commands() -> list[Command]:
    """Every command of every documented file, in order, each run once (the first place it is shown)."""
    commands: list[Command] = []
    seen: set = set()
    for path in documented_files():
        commands += readme_commands(path, seen)
    return commands


def readme_commands(path: Path = REPO / "README.md", seen: set | None = None) -> list[Command]:
    """Every command of a Markdown file's fenced blocks, in order, duplicates (same text) once; `seen` carries
    the commands of files read before, so a command shown in two files runs once."""
    commands: list[Command] = []
    seen = set() if seen is None else seen
    source = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    for lang, line, logical in fenced_lines(path.read_text(encoding="utf-8")):
        try:
            tokens = shlex.split(logical, comments=True)
        except ValueError:
            tokens = []
        if not tokens:
            continue
        chains: list[list[str]] = [[]]
        for token in tokens:
            if token == "&&":
                chains.append([])
            else:
                chains[-1].append(token)
        for chain in chains:
            cmd = classify(list(chain), " ".join(chain), line)
            cmd.source = source
            if cmd.kind == "unknown" and lang not in ("bash", "sh", "shell", "console"):
                continue  # an untagged block's text (sample output, a layout) is not a command
            key = (cmd.kind, tuple(cmd.argv)) if cmd.kind != "skip" else cmd.text
            if key not in seen:  # `python -m rlx` and `.venv/bin/python -m rlx` are the same run
                seen.add(key)
                commands.append(cmd)
    return commands


_ABSENT = object()


def sweep_values(key: str, value: str) -> list[str] | None:
    """The values of a sweep override (`a,b`, `range(0,3)`, `glob(*)` over a group's options), or None when the
    value is not a sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob

    override = OverridesParser.create().parse_override(f"{key}={value}")
    if not override.is_sweep_override():
        return None
    if isinstance(override.value(), Glob):
        from rlx.cli.configs import config_dirs

        return override.value().filter(sorted(p.stem for p in (config_dirs()[0] / key).glob("*.yaml")))
    return [str(v) for v in override.sweep_string_iterator()]


def set_override(tokens: list[str], token: str) -> None:
    """Replace the override of token's key in place, or append it."""
    key = token.split("=", 1)[0].lstrip("+~")
    for i, old in enumerate(tokens):
        if not old.startswith("-") and old.split("=", 1)[0].lstrip("+~") == key:
            tokens[i] = token
            return
    tokens.append(token)


DEFAULT = Command(text="python -m rlx", line=0, argv=["-m", "rlx"], kind="run")
A_SWEEP = Command(
    text="python -m rlx +sweeps=eps_beta_g", line=0, argv=["-m", "rlx", "+sweeps=eps_beta_g"], kind="sweep"
)
WORKERS = 2  # commands run at once; each is one process with one torch thread


class Artifacts:
    """Shrunk command runs, each made once per test session and shared (the README test, the terminal-output
    test, and the inputs the README's placeholders stand for: an exported policy, a sweep directory).

    `prefetch` starts them WORKERS at a time: the default run and the slowest (reward=triton's warm start) first,
    since later runs reuse the warm start the default run caches; a run that needs another's output (model=hf
    needs the exported policy, rlx.report a sweep) waits for it. Shrinking (which composes configs with Hydra's
    global state) happens on the calling thread, before any process starts."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.root, self.cache = root, cache
        self._plans: dict[tuple[str, ...], tuple[list[str], dict, Path, list]] = {}
        self._futures: dict[tuple[str, ...], Future] = {}
        self._pool = ThreadPoolExecutor(max_workers=WORKERS)
        self._lock = threading.Lock()

    @staticmethod
    def key(cmd: Command) -> tuple[str, ...]:
        return (cmd.kind, *cmd.argv)

    def plan(self, cmd: Command) -> tuple[str, ...]:
        key = self.key(cmd)
        if key not in self._plans:
            work = self.root / f"run{len(self._plans)}"
            needs: list = []
            self._plans[key] = ([], {}, work, needs)  # reserve the slot: shrink may plan dependencies
            argv, expect = shrink(cmd, self, work, needs)
            self._plans[key] = (argv, expect, work, needs)
        return key

    def submit(self, cmd: Command) -> Future:
        key = self.plan(cmd)
        with self._lock:
            if key not in self._futures:
                argv, _, work, needs = self._plans[key]

                def job(argv=argv, work=work, needs=tuple(needs)):
                    for dependency in needs:
                        proc = self._futures[dependency].result()
                        assert proc.returncode == 0, "a run this one needs failed:\n" + output(proc)
                    return run_cli(argv, work, self.cache)

                self._futures[key] = self._pool.submit(job)
        return self._futures[key]

    def prefetch(self, commands: list[Command]) -> None:
        first = [DEFAULT, *[c for c in commands if c.kind == "run" and "reward=triton" in c.argv]]
        for cmd in [*first, *commands]:
            if cmd.kind != "skip":
                self.submit(cmd)

    def close(self) -> None:
        """Drop the runs not started yet (after a failure with -x); wait for the ones running."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def run(self, cmd: Command) -> tuple[subprocess.CompletedProcess, dict]:
        """(the finished process, what shrink() says to check) for a command."""
        future = self.submit(cmd)
        return future.result(), self._plans[self.key(cmd)][1]

    def default_run(self) -> tuple[subprocess.CompletedProcess, dict]:
        """The README's first command, `python -m rlx`, shrunk."""
        return self.run(DEFAULT)

    def policy_dir(self, needs: list) -> Path:
        """A model directory for model=hf: the export of the shrunk default run (which `needs` then waits for)."""
        needs.append(self.plan(DEFAULT))
        return self._plans[self.key(DEFAULT)][1]["run"] / "policy"

    def jsonl(self) -> tuple[Path, Path]:
        return write_jsonl(self.root / "jsonl")

    def sweep_dir(self, needs: list) -> Path:
        """A finished sweep directory: the shrunk `python -m rlx +sweeps=eps_beta_g`."""
        needs.append(self.plan(A_SWEEP))
        self.submit(A_SWEEP)
        return self._plans[self.key(A_SWEEP)][1]["sweep"]

    def config_dir(self, name: str, tokens: list[str]) -> Path:
        """A user's --config-dir holding each `+group=option` the command names that rlx does not have."""
        from rlx.cli.configs import config_dirs

        directory = self.root / name
        conf, sweeps = config_dirs()
        for token in tokens:
            match = re.match(r"^(\+{0,2})([\w/]+)=(\w+)$", token)
            if not match or (not match.group(1) and not (conf / match.group(2)).is_dir()):
                continue  # not a group option (`seed=0`), or one to add (+group=option) to a group rlx lacks
            group, option = match.group(2), match.group(3)
            if (conf / group / f"{option}.yaml").is_file() or (
                group == "sweeps" and (sweeps / f"{option}.yaml").is_file()
            ):
                continue
            path = directory / group / f"{option}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            body = (
                "hydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      seed: 0,1\n"
                if group == "sweeps"
                else "algo:\n  beta: 0.0\n"
            )
            path.write_text(f"# @package _global_\n# a user's own {group} option (tests/e2e)\n{body}")
        directory.mkdir(parents=True, exist_ok=True)
        return directory


def shrink(cmd: Command, artifacts: Artifacts, work: Path, needs: list) -> tuple[list[str], dict]:
    """(argv for `python`, what to check) for one README command, shrunk to seconds; `needs` collects the runs
    it reads the output of."""
    work.mkdir(parents=True, exist_ok=True)
    if cmd.kind == "score":
        args = dict(a.split("=", 1) for a in cmd.argv[2:] if "=" in a)
        task, completion = write_score_inputs(args["reward"], work)
        tokens = [a for a in cmd.argv[2:] if not a.startswith(("task=", "completion="))]
        return ["-m", "rlx.score", *tokens, f"task={task}", f"completion={completion}"], {"verdict": "PASS"}
    if cmd.kind == "report":
        sweep = artifacts.sweep_dir(needs)
        tokens = [a if a.startswith("-") else str(sweep) for a in cmd.argv[2:]]
        return ["-m", "rlx.report", *tokens], {"report": sweep / "report.md"}
    if cmd.kind == "info":
        return list(cmd.argv), {}
    if cmd.kind == "bench":
        script = Path(cmd.argv[0]).name
        if script not in BENCH:
            pytest.fail(f"{cmd.where}: no shrink rule for bench/{script}: add it to BENCH in tests/e2e/readme.py")
        sweep = artifacts.sweep_dir(needs) if any("{sweep}" in a for a in BENCH[script]) else None
        args = [a.format(work=work, sweep=sweep) for a in BENCH[script]]
        return [str(REPO / cmd.argv[0]), *args], {}  # run from `work`
    # python -m rlx ...: placeholders and paths first, then the one-step shrink where the config has the key
    tokens, flags, config_dir = [], [], None
    rest = iter(cmd.argv[2:])
    for token in rest:
        if token in ("--config-dir", "-cd"):
            config_dir = artifacts.config_dir(next(rest), cmd.argv)
            flags += ["--config-dir", str(config_dir)]
            continue
        if token.startswith("-"):
            flags.append(token)
            continue
        for placeholder, value in PLACEHOLDERS.items():
            token = token.replace(placeholder, value)
        key, _, value = token.partition("=")
        if key == "model.name_or_path":
            token = f"{key}={artifacts.policy_dir(needs)}"
        elif key in ("data.train_file", "data.val_file"):
            train, val = artifacts.jsonl()
            token = f"{key}={train if key.endswith('train_file') else val}"
        elif key == "data.path":  # data=kernelbench's directory of problem files
            token = f"{key}={KERNELBENCH / 'level1'}"
        if re.search(r"<[^>]+>", token):
            pytest.fail(f"{cmd.where}: no rule for the placeholder in {token!r} (tests/e2e/readme.py)")
        tokens.append(token)
    swept: dict[str, list[str]] = {}
    for token in tokens:
        key, _, value = token.partition("=")
        values = sweep_values(key, value) if value else None
        if values is not None:
            swept[key.lstrip("+")] = values
    probe = [
        t
        if t.partition("=")[0].lstrip("+") not in swept
        else f"{t.partition('=')[0]}={swept[t.partition('=')[0].lstrip('+')][0]}"
        for t in tokens
    ]
    cfg = compose_config(probe, config_dir=config_dir, with_hydra=True)
    sweeper = str(cfg.hydra.sweeper.get("_target_", ""))
    if cmd.kind in ("sweep", "compose") and "optuna" not in sweeper:
        for key, value in (cfg.hydra.sweeper.get("params") or {}).items():
            swept.setdefault(str(key), sweep_values(str(key), str(value)) or [str(value)])
    if cmd.kind == "compose":
        return ["-m", "rlx", *flags, *tokens, "--cfg", "hydra"], {"composes": True}
    for i, (key, values) in enumerate(swept.items()):  # at most SWEEP_JOBS jobs
        set_override(tokens, f"{key}={','.join(values[: SWEEP_JOBS if i == 0 else 1])}")
    shrinking = list(SHRINK)
    if str(OmegaConf.select(cfg, "data._target_", default="")).endswith("KernelTask"):
        shrinking += KERNELS
    elif str(OmegaConf.select(cfg, "data._target_", default="")).endswith("KernelBenchTask"):
        shrinking += [*KERNELBENCH_SHRINK, f"data.max_new_tokens={MAX_NEW_TOKENS}"]
    elif (OmegaConf.select(cfg, "data.max_new_tokens", default=0) or 0) > MAX_NEW_TOKENS:
        shrinking.append(f"data.max_new_tokens={MAX_NEW_TOKENS}")
    for token in shrinking:
        key = token.split("=", 1)[0]
        if key not in swept and OmegaConf.select(cfg, key, default=_ABSENT) is not _ABSENT:
            set_override(tokens, token)
    expect: dict = {}
    if cmd.kind == "sweep":
        if "optuna" in sweeper:
            set_override(tokens, f"hydra.sweeper.n_trials={SWEEP_JOBS}")
        if OmegaConf.select(cfg, "hydra.launcher.n_jobs", default=None) is not None:
            set_override(tokens, f"hydra.launcher.n_jobs={SWEEP_JOBS}")
        set_override(tokens, f"hydra.sweep.dir={work / 'sweep'}")
        expect["sweep"] = work / "sweep"
    else:
        set_override(tokens, f"hydra.run.dir={work / 'run'}")
        expect["run"] = work / "run"
    return ["-m", "rlx", *flags, *tokens], expect


def check(proc, expect: dict) -> None:
    assert proc.returncode == 0, output(proc)
    assert "Traceback" not in proc.stderr, output(proc)
    if "run" in expect:
        summary = json.loads((expect["run"] / "summary.json").read_text())
        assert summary["steps"] == int(ONE_STEP[0].split("=")[1]), summary
    if "sweep" in expect:
        report = (expect["sweep"] / "report.md").read_text()
        found = re.search(r"(\d+) runs: (\d+) completed", report)
        assert found and found.group(1) == found.group(2) and int(found.group(1)) >= 1, report[:800]
    if "verdict" in expect:
        assert json.loads(proc.stdout)["status"] == expect["verdict"], proc.stdout
    if "report" in expect:
        assert expect["report"].is_file()
    if expect.get("composes"):
        assert "mode: MULTIRUN" in proc.stdout, output(proc)
