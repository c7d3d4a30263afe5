"""Puts rlx's configs on the search path of every Hydra app in this environment.

Appended, so they rank below the app's own configs and below `--config-dir`:

- `<rlx>/conf`   rlx's config groups (`algo/`, `reward/`, ...): a user's own `@hydra.main` app can compose
                 them (`defaults: [algo: grpo, ...]`); for `python -m rlx` it is already the primary path and
                 is not added twice.
- `<rlx>/sweeps` one level up, as the `sweeps` group: `python -m rlx +sweeps=eps_beta_g` runs a ready sweep,
                 and a user's `my_conf/sweeps/mine.yaml` joins it (`python -m rlx --config-dir my_conf
                 +sweeps=mine`).

`<rlx>` is found without importing rlx (Hydra imports every plugin module when it scans, so this module must
stay light): the directory holding the `rlx` package, or the package itself where conf/ and sweeps/ are shipped
inside it. Where neither exists (a wheel without them) the plugin adds nothing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

PROVIDER = "rlx"


def rlx_roots() -> list[Path]:
    """Directories that may hold rlx's `conf/` and `sweeps/`: the package dir, then its parent (a checkout)."""
    spec = importlib.util.find_spec("rlx")
    if spec is None or not spec.submodule_search_locations:
        return []
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    return [package, package.parent]


def _first(name: str) -> Path | None:
    return next((root / name for root in rlx_roots() if (root / name).is_dir()), None)


def _file_path(entry_path: str | None) -> Path | None:
    if entry_path and entry_path.startswith("file://"):
        return Path(entry_path[len("file://"):]).resolve()
    if entry_path and "://" not in entry_path:
        return Path(entry_path).resolve()
    return None


class RlxSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        present = {_file_path(e.path) for e in search_path.get_path()}
        conf = _first("conf")
        if conf is not None and conf not in present:
            search_path.append(provider=PROVIDER, path=f"file://{conf}")
        sweeps = _first("sweeps")
        if sweeps is not None and sweeps.parent not in present:
            search_path.append(provider=PROVIDER, path=f"file://{sweeps.parent}")
