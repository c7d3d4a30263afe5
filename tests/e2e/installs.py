"""Install a copy of this checkout into a throwaway venv, fast: no dependency resolution (--no-deps), no build
isolation where this environment can build rlx itself, and this interpreter's site-packages (torch, hydra, ...)
reached through a path file, so only rlx itself is installed. Used by the wheel-install and the plugin
discovery tests; each install mode is built once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("rlx", "plugins", "conf", "sweeps", "setup.py", "pyproject.toml", "README.md")
_INSTALLED: dict[str, tuple[Path, Path]] = {}


def builds_without_index() -> bool:
    """This environment can build rlx itself (setuptools >= 64 for PEP 660, and bdist_wheel: built into
    setuptools >= 70.1 or from `wheel`). If not (a fresh 3.11 venv ships setuptools 65), pip builds in
    isolation, fetching them from the package index as the CI install just did."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    try:
        major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (64, 0) and ((major, minor) >= (70, 1) or find_spec("wheel") is not None)


def clean_env() -> dict[str, str]:
    """No PYTHONPATH (the checkout must not leak in), no W&B key or network."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("WANDB_")}
    env.update(NETRC=os.devnull, WANDB_SILENT="true", OMP_NUM_THREADS="1")
    return env


def install(root: Path, mode: str) -> tuple[Path, Path]:
    """(python, source copy). mode: wheel (`pip install .`), or an editable mode: lenient (setuptools'
    default, what the README's `pip install -e .` does), strict, compat."""
    if mode in _INSTALLED:
        return _INSTALLED[mode]
    src = root / f"src-{mode}"
    src.mkdir(parents=True)
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (REPO / name).is_file():
            shutil.copy(REPO / name, src / name)
    venv = root / f"venv-{mode}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / "_host_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    args = ["."] if mode == "wheel" else ["-e", "."] if mode == "lenient" else \
        ["-e", ".", "--config-settings", f"editable_mode={mode}"]
    isolation = ["--no-build-isolation"] if builds_without_index() else []
    done = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", *isolation,
                           "--disable-pip-version-check", *args], cwd=src, env=clean_env(), text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    if mode == "wheel":  # nothing may come from the source copy: run from the installed package only
        shutil.rmtree(src)
    _INSTALLED[mode] = (python, src)
    return python, src
