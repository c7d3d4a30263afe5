"""Where rlx's configs are, and how Hydra reads them: one `rlx://` config source.

rlx keeps two config trees side by side: `conf/` (the config groups: `algo/`, `reward/`, ...) and `sweeps/`
(ready multiruns, the `sweeps` group). A wheel ships them inside the package (`rlx/conf`, `rlx/sweeps`); a
checkout (editable install) has them at the repository's top level, next to `rlx/`. A Hydra search-path
entry is a root whose subdirectories are groups, so `sweeps/` as a group would need their common parent on
the path: the repository root (where Hydra's `--help` would scan `.venv/` and every old output) or the
package directory (where `algos/`, `rollout/`, ... would show up as groups). `RlxConfigSource` instead
serves `conf/` with `sweeps/` grafted in as one more group, and `RlxSearchPathPlugin` appends it to every
Hydra app's search path as `rlx://` — below the app's own configs (and, as Hydra orders them, above
`--config-dir`, which adds options rather than shadowing rlx's).

This module is imported by Hydra's plugin scan in every Hydra app (plugins/rlx_searchpath re-exports these
classes), so it imports only the standard library and Hydra.
"""

from __future__ import annotations

import os

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from rlx.cli import help as rlx_help
from rlx.cli.paths import SWEEPS, config_dirs

SCHEME = "rlx"
__all__ = ["SCHEME", "SWEEPS", "RlxConfigSource", "RlxSearchPathPlugin", "config_dirs", "register"]


class RlxConfigSource(ConfigSource):
    """`rlx://`: conf/'s groups plus sweeps/ as the group `sweeps` (the path after `rlx://` is ignored)."""

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        self.conf, self.sweeps = (str(p) for p in config_dirs())

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _full(self, config_path: str) -> str:
        head, _, rest = config_path.strip("/").partition("/")
        if head == SWEEPS:
            return os.path.realpath(os.path.join(self.sweeps, rest))
        return os.path.realpath(os.path.join(self.conf, config_path))

    def load_config(self, config_path: str) -> ConfigResult:
        full_path = self._full(self._normalize_file_name(config_path))
        if not os.path.isfile(full_path):
            raise ConfigLoadError(f"Config not found : {full_path}")
        with open(full_path, encoding="utf-8") as f:
            header = ConfigSource._get_header_dict(f.read(512))
            f.seek(0)
            cfg = OmegaConf.load(f)
        return ConfigResult(
            config=cfg, path=f"file://{os.path.dirname(full_path)}", provider=self.provider, header=header
        )

    def available(self) -> bool:
        return os.path.isdir(self.conf)

    def is_group(self, config_path: str) -> bool:
        return os.path.isdir(self._full(config_path))

    def is_config(self, config_path: str) -> bool:
        return os.path.isfile(self._full(self._normalize_file_name(config_path)))

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        names = os.listdir(self._full(config_path))
        if config_path.strip("/") == "" and os.path.isdir(self.sweeps):
            names.append(SWEEPS)
        files: list[str] = []
        for name in names:
            self._list_add_result(
                files=files, file_path=os.path.join(config_path, name), file_name=name, results_filter=results_filter
            )
        return sorted(set(files))


class RlxSearchPathPlugin(SearchPathPlugin):
    """Appends `rlx://` (rlx's groups and sweeps) to the search path, once."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        rlx_help.register()  # conf/hydra/help/rlx.yaml's `${rlx_help:groups}`, wherever rlx's configs are used
        if not any(str(e.path).startswith(f"{SCHEME}://") for e in search_path.get_path()):
            search_path.append(provider="rlx", path=f"{SCHEME}://")


def register() -> None:
    """Make both classes known to Hydra without its plugin scan, which cannot see the plugin package in
    some editable installs (setuptools' compat mode; hydra issues 2359, 3252). Idempotent."""
    plugins = Plugins.instance()
    plugins.register(RlxConfigSource)
    plugins.register(RlxSearchPathPlugin)
    rlx_help.register()
