"""Seeds → configurations: the runs of a sweep that differ only in `seed` are one configuration, reported as
mean ± std over its seeds; a configuration is called best only when its lead exceeds the seed-to-seed spread.

Nothing here imports torch or matplotlib.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from rlx.report.runs import Run

SEED_KEY = "seed"


@dataclass
class Config:
    values: dict[str, str]  # the swept keys other than the seed, as the runs' overrides spell them
    runs: list[Run] = field(default_factory=list)

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values.items()) or "(all runs)"

    def completed(self) -> list[Run]:
        return [r for r in self.runs if r.status == "completed"]

    def seeds(self) -> list[str]:
        return [r.override_map.get(SEED_KEY, "?") for r in self.runs]


def seeds_swept(runs: list[Run], keys: list[str]) -> bool:
    """`seed` is one of the sweep's keys and some configuration ran with more than one seed."""
    return SEED_KEY in keys and any(len(c.runs) > 1 for c in group_by_config(runs, keys))


def group_by_config(runs: list[Run], keys: list[str]) -> list[Config]:
    """One Config per distinct assignment of the non-seed keys, in first-seen order."""
    config_keys = [k for k in keys if k != SEED_KEY]
    groups: dict[tuple[str, ...], Config] = {}
    for run in runs:
        m = run.override_map
        values = tuple(m.get(k, "") for k in config_keys)
        groups.setdefault(values, Config(dict(zip(config_keys, values)))).runs.append(run)
    return list(groups.values())


def clean(values) -> list[float]:
    return [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def mean_std(values) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n − 1; None with fewer than two values) of the non-missing values."""
    xs = clean(values)
    if not xs:
        return None, None
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else None)


def fmt_mean_std(values, digits: int = 3, signed: bool = False) -> str:
    mean, std = mean_std(values)
    if mean is None:
        return "—"
    text = f"{mean:+.{digits}f}" if signed else f"{mean:.{digits}f}"
    return text if std is None else f"{text} ± {std:.{digits}f}"


@dataclass
class Leader:
    index: int | None  # the configuration to mark as best (None: no lead beyond the spread)
    note: str  # one sentence saying why


def leader(configs: list[Config], score) -> Leader:
    """The configuration with the best mean `score(run)` over its completed runs, if its lead over the
    runner-up exceeds the spread: the larger of the two configurations' seed standard deviations."""
    stats = []
    for i, c in enumerate(configs):
        mean, std = mean_std(score(r) for r in c.completed())
        if mean is not None:
            stats.append((mean, std, i))
    if len(stats) < 2:
        return Leader(None, "fewer than two configurations finished: nothing to rank")
    stats.sort(reverse=True, key=lambda s: s[0])
    (best, best_std, i), (second, second_std, j) = stats[0], stats[1]
    lead = best - second
    if best_std is None or second_std is None:
        return Leader(None, "a leading configuration has a single seed: its spread is unknown, so none is marked best")
    spread = max(best_std, second_std)
    name, other = configs[i].label(), configs[j].label()
    if lead > spread:
        return Leader(i, f"best: `{name}`, ahead of `{other}` by {lead:.3f}, more than the seed-to-seed spread "
                         f"({spread:.3f}, the larger std of the two)")
    return Leader(None, f"no configuration is marked best: `{name}` leads `{other}` by {lead:.3f}, within the "
                        f"seed-to-seed spread ({spread:.3f}, the larger std of the two)")
