"""Where rlx's two config trees are: `conf/` (the config groups) and `sweeps/` (ready multiruns), inside the
package (a wheel: rlx/conf, rlx/sweeps) or beside it (a checkout). Standard library only: the help, the config
source and the preflight checks all read it.
"""

from __future__ import annotations

from pathlib import Path

SWEEPS = "sweeps"


def config_dirs() -> tuple[Path, Path]:
    """(conf, sweeps): inside the package (a wheel) or beside it (a checkout)."""
    package = Path(__file__).resolve().parents[1]
    for root in (package, package.parent):
        if (root / "conf" / "config.yaml").is_file():
            return root / "conf", root / SWEEPS
    raise FileNotFoundError(
        f"rlx's conf/ is neither in {package} (a wheel) nor in {package.parent} (a checkout): "
        "reinstall rlx (pip install .)"
    )
