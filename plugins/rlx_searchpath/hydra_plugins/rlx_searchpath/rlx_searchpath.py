"""Puts rlx's config groups and ready sweeps on the search path of every Hydra app in this environment.

Hydra discovers plugins by importing the modules of the `hydra_plugins` namespace package; this one exposes
rlx's `rlx://` config source (conf/ with sweeps/ as the `sweeps` group) and the search-path plugin that
appends it, below the app's own configs. A user's own `@hydra.main` app can then compose rlx's groups
(`defaults: [algo: grpo, ...]`) and `+sweeps=eps_beta_g`.

The classes live in `rlx.cli.configs` (standard library and Hydra only, so this scan stays cheap):
`python -m rlx` registers the same classes itself, so it works where an editable install hides this
namespace package from Hydra's scan (hydra issues 2359, 3252).
"""

from rlx.cli.configs import RlxConfigSource, RlxSearchPathPlugin

__all__ = ["RlxConfigSource", "RlxSearchPathPlugin"]
