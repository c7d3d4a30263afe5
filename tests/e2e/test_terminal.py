"""What a user sees: `--help` (rlx's own, generated from conf/, fast), a default run's terminal output (each line
once, no third-party warning, no `Epoch 0/-2`), and the progress line on and off a terminal."""

from __future__ import annotations

import io
import re
from collections import Counter
from types import SimpleNamespace

import pytest

from rlx.cli.configs import config_dirs
from rlx.cli.help import describe
from tests.conftest import cli_env, compose_config, output, run_cli
from tests.e2e.readme import sweep_values

NOISE = re.compile(
    r"warning|Warning|INFO:|💡|litlogger|Epoch \d|it/s|will be deleted|eval mode|Traceback|"
    r"Loading weights|Writing model shards|HYDRA_FULL_ERROR",
    re.IGNORECASE,
)


def test_help_is_rlx_own_generated_and_fast(tmp_path, test_cache):
    # fast by construction, not by a stopwatch (a loaded machine makes any wall-clock bound flaky): --help is
    # answered from conf/ alone, so neither torch nor Lightning is imported (-X importtime lists every import)
    env = {**cli_env(test_cache), "PYTHONPROFILEIMPORTTIME": "1"}
    proc = run_cli(["-m", "rlx", "--help"], tmp_path, test_cache, env=env)
    assert proc.returncode == 0, output(proc)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "hydra" in imported and not imported & {"torch", "lightning", "transformers"}, sorted(imported)[:50]
    text = proc.stdout
    assert text.startswith("rlx: RL post-training") and "== Examples ==" in text and "powered by Hydra" not in text
    conf, sweeps = config_dirs()
    groups = [p for p in conf.iterdir() if p.is_dir() and p.name != "hydra"] + [sweeps]
    for group in groups:  # every group and option, each with the start of its header's first sentence
        assert re.search(rf"^{group.name}  \S", text, re.MULTILINE), f"group {group.name} missing from --help"
        for option in (p for p in group.glob("*.yaml") if not p.stem.startswith("_")):
            first_words = " ".join(describe(option).split()[:3])
            assert re.search(rf"^  [ *] {option.stem} +{re.escape(first_words)}", text, re.MULTILINE), option
    assert ".venv" not in text and "outputs" not in text.split("== Examples ==")[0]  # no scanned junk groups


def test_help_examples_compose(tmp_path, test_cache):
    text = run_cli(["-m", "rlx", "--help"], tmp_path, test_cache).stdout
    examples = [
        line.split("  ")[0].strip()
        for line in text.split("== Examples ==")[1].split("== More ==")[0].splitlines()
        if line.strip().startswith("python -m rlx ")
    ]
    assert len(examples) >= 5
    for example in examples:
        overrides = []
        for token in example.split()[3:]:
            if token.startswith("-"):
                continue
            key, _, value = token.partition("=")
            values = sweep_values(key, value)
            overrides.append(f"{key}={values[0]}" if values else token)
        compose_config(overrides, with_hydra=True)  # raises if an example does not compose


@pytest.mark.slow
def test_a_default_run_prints_each_line_once_with_no_third_party_noise(artifacts):
    proc, expect = artifacts.default_run()
    assert proc.returncode == 0, output(proc)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    repeated = [line for line, n in Counter(lines).items() if n > 1]
    assert not repeated, f"printed more than once: {repeated}\n{output(proc)}"
    noisy = [line for line in lines if NOISE.search(line)]
    assert not noisy, f"third-party noise: {noisy}\n{output(proc)}"
    assert any(re.search(r"step 1/1  reward \d\.\d{3}", line) for line in lines), output(proc)
    assert proc.stderr == "", output(proc)
    assert "before RL" in (expect["run"] / "rlx.log").read_text()  # the full log is kept in the run directory


def fake_trainer(step: int, total: int = 20) -> SimpleNamespace:
    metrics = {"reward/mean": 0.5, "loss/kl": 0.0123, "loss/clipfrac": 0.0}
    return SimpleNamespace(
        global_step=step,
        max_steps=total,
        callback_metrics=metrics,
        state=SimpleNamespace(fn="fit"),
        sanity_checking=False,
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_a_terminal_prints_every_k_steps():
    from rlx.cli.progress import Progress

    out = io.StringIO()
    progress = Progress(every_n_steps=5, stream=out)
    progress.on_train_start(fake_trainer(0), None)
    for step in range(1, 21):
        progress.on_train_batch_end(fake_trainer(step), None, None, None, step - 1)
    steps = [int(m) for m in re.findall(r"step (\d+)/20", out.getvalue())]
    assert steps == [1, 5, 10, 15, 20], out.getvalue()
    assert "reward 0.500  kl 0.0123  clipfrac 0.000" in out.getvalue()
    assert "\r" not in out.getvalue() and "Epoch" not in out.getvalue()


def test_progress_on_a_terminal_redraws_one_line():
    from rlx.cli.progress import Progress

    out = Terminal()
    progress = Progress(every_n_steps=5, stream=out)
    progress.on_train_start(fake_trainer(0), None)
    for step in range(1, 4):
        progress.on_train_batch_end(fake_trainer(step, total=3), None, None, None, step - 1)
    progress.on_train_end(fake_trainer(3, total=3), None)
    text = out.getvalue()
    assert text.count("\r\x1b[K") == 3 and text.count("\n") == 1 and "step 3/3" in text
