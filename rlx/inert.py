"""Inert keys: a key set on the command line (or by a sweep) that cannot change anything in this run.

`python -m rlx algo.epsilon=0.1` with one optimiser step per rollout batch trains exactly like ε = 0.2: the
ratio π_θ/π_old is 1, so no clip acts. Such a key is legal (it composes, and it acts in another config), so it
is not an error; `warn_inert` says so at start, before the model loads, and writes the findings to
`<run_dir>/inert.json`, where the sweep report reads them to mark a swept key as inert.

A rule is one small function over the built components, registered for the key patterns it covers (fnmatch
globs on the dotted key). It reads what the components declare about themselves (`uses_old_logp`, the update
schedule, β, the critic, the sampler's and the task's own settings), never an algorithm's name, and returns
why the key is inert (with the fix) or None. Adding one:

    @rule("algo.shaping.overlong_cache_length")
    def _overlong_cache(p: Parts) -> str | None:
        if p.algo.shaping.max_length is None:
            return "no soft overlong punishment (algo.shaping.overlong_max_length=null)"
        return None

and a case in tests/unit/test_inert.py.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlx.algos.advantages import GroupNorm
from rlx.algos.entropy import AdaptiveEntropy, EntropyBonus

log = logging.getLogger(__name__)
INERT_FILE = "inert.json"


@dataclass
class Parts:
    """What the rules read: the composed config and the components built from it (the model not yet loaded)."""

    cfg: DictConfig
    algo: Any
    advantage: Any
    task: Any
    reward: Any
    sampler: Any
    model: Any  # the model factory (e.g. rlx.models.tiny.TinyModel), before it loads anything


@dataclass(frozen=True)
class Rule:
    patterns: tuple[str, ...]
    check: Callable[[Parts], str | None]


RULES: list[Rule] = []


def rule(*patterns: str):
    """Register `check` for the keys matching any of `patterns`."""

    def register(check: Callable[[Parts], str | None]):
        RULES.append(Rule(patterns, check))
        return check

    return register


def warm_started(model) -> bool:
    """A model factory that warm-starts from the task's teacher declares its recipe (`warm_start`, e.g.
    rlx.models.tiny.TinyModel); one that loads a directory (model=hf) has none."""
    return getattr(model, "warm_start", None) is not None


# ------------------------------------------------------------------------------------------------ rules
@rule("algo.epsilon", "algo.epsilon_high", "policy_loss.*")
def _clip_range(p: Parts) -> str | None:
    if not p.algo.policy_loss.uses_old_logp:
        return (
            f"the policy loss {type(p.algo.policy_loss).__name__} has no importance ratio, so no clip range "
            "applies (choose a ratio loss: policy_loss=clip, dual_clip, gspo, cispo, sapo, gmpo, dppo_tv, ...)"
        )
    if p.algo.updates_per_batch == 1:  # at ρ = 1 every ratio shape's gradient is REINFORCE's (rlx.algos.ratio_shapes)
        return (
            "one optimiser step per rollout batch (algo.update_epochs × algo.minibatches = 1): the ratio "
            "π_θ/π_old is exactly 1, so the clip (or the ratio's shape) never acts. Raise algo.update_epochs or "
            "algo.minibatches"
        )
    return None


@rule("algo.epsilon", "algo.epsilon_high")
def _epsilon_unread(p: Parts) -> str | None:
    if p.algo.policy_loss.uses_old_logp and not p.algo.policy_loss.reads_epsilon:
        return (
            f"the policy loss {type(p.algo.policy_loss).__name__} does not read algo.epsilon (its own keys set "
            "its shape: see conf/policy_loss/)"
        )
    return None


@rule("kl.importance_weighted")
def _kl_weight_is_one(p: Parts) -> str | None:
    if p.algo.kl.estimator is not None and p.algo.beta > 0:
        if p.algo.kl.in_reward:
            return "kl.placement=reward measures the KL at the sampling policy itself, where the weight π_θ/π_old is 1"
        if p.algo.updates_per_batch == 1:
            return "one optimiser step per rollout batch: π_θ = π_old at the only update, so the weight is 1"
    return None


@rule("token_select.coef")
def _kl_cov_at_ratio_one(p: Parts) -> str | None:
    if p.algo.updates_per_batch == 1:
        return (
            "one optimiser step per rollout batch: |log ρ| = 0 with zero gradient at ρ = 1, so the KL-Cov penalty "
            "never acts. Raise algo.update_epochs or algo.minibatches"
        )
    return None


@rule("token_select.fraction")
def _fraction_below_one_token(p: Parts) -> str | None:
    tokens = p.algo.prompts_per_step * p.algo.group_size * p.task.max_new_tokens // p.algo.minibatches
    if p.algo.token_select.fraction * tokens < 1:
        return (
            f"a minibatch has at most {tokens} completion tokens here, so ⌊fraction·n⌋ < 1 and the selection takes "
            f"its floor of 1 token whatever the fraction. Raise token_select.fraction above 1/{tokens}"
        )
    return None


@rule("entropy.coef")
def _zero_entropy_bonus(p: Parts) -> str | None:
    if isinstance(p.algo.entropy, EntropyBonus) and p.algo.entropy.coef == 0:
        return "entropy.coef=0 subtracts 0·H: set entropy.coef > 0 (e.g. 0.001), or entropy=none"
    return None


@rule("entropy.*")
def _adaptive_held_at_zero(p: Parts) -> str | None:
    if isinstance(p.algo.entropy, AdaptiveEntropy) and p.algo.entropy.coef_max == 0:
        return "entropy.coef_max=0 clamps the adaptive coefficient at 0, so the bonus never acts: raise it (TRL: 1)"
    return None


@rule("entropy.coef_min", "entropy.coef_max")
def _adaptive_never_moves(p: Parts) -> str | None:
    if isinstance(p.algo.entropy, AdaptiveEntropy) and p.algo.entropy.delta == 0:
        return "entropy.delta=0: the coefficient stays at entropy.coef, inside its bounds. Set entropy.delta > 0"
    return None


@rule("algo.ref_sync_steps", "algo.ref_sync_alpha")
def _no_reference_to_refresh(p: Parts) -> str | None:
    if not p.algo.uses_reference:
        return "no reference model is loaded (kl=none or algo.beta=0), so there is nothing to refresh"
    return None


@rule("algo.ref_sync_alpha")
def _never_refreshed(p: Parts) -> str | None:
    if p.algo.ref_sync_steps is None:
        return "algo.ref_sync_steps=null: the reference is never refreshed, so the mixing weight is unread"
    return None


@rule("advantage.eps", "advantage.std")
def _no_std_division(p: Parts) -> str | None:
    if isinstance(p.advantage, GroupNorm) and p.advantage.scale == "none":
        return "advantage.scale=none divides by no std, so neither its kind nor its eps is read"
    return None


@rule("kl.*")
def _kl_unused(p: Parts) -> str | None:
    if p.algo.kl.estimator is None:
        return "kl=none: there is no KL estimator, so nothing reads it. Choose kl=k1, k2 or k3"
    if p.algo.beta == 0:
        return "algo.beta=0: there is no KL term and no reference model is loaded. Set algo.beta > 0"
    return None


@rule("algo.beta")
def _beta_without_estimator(p: Parts) -> str | None:
    if p.algo.kl.estimator is None:
        return "kl=none: no KL estimator and no reference model, so β weighs nothing. Choose kl=k1, k2 or k3"
    return None


@rule("algo.critic.*")
def _critic_keys(p: Parts) -> str | None:
    if p.algo.critic is None:
        return "this run has no critic (algo.critic=null): only algo=ppo (advantage=gae) trains one"
    return None


@rule("algo.shaping.overlong_cache_length")
def _overlong_cache(p: Parts) -> str | None:
    if p.algo.shaping.max_length is None:
        return "no soft overlong punishment (algo.shaping.overlong_max_length=null): set it to use the buffer"
    return None


@rule("curriculum.pace_start")
def _unpaced(p: Parts) -> str | None:
    if p.sampler.pace_steps == 0:  # the key exists only for curriculum=sorted
        return "curriculum.pace_steps=0 walks the whole order unpaced, so nothing is unlocked gradually"
    return None


@rule("curriculum.lo", "curriculum.hi", "curriculum.prior", "curriculum.ema")
def _band_without_band(p: Parts) -> str | None:
    if p.sampler.explore == 1.0:  # the keys exist only for curriculum=learnable_band
        return "curriculum.explore=1: every prompt comes from the exploration walk, none from the band"
    return None


@rule("model.warm_start.plateau_check_step")
def _no_plateau_loss(p: Parts) -> str | None:
    if p.task.warm_start_plateau_loss is None:
        return "the task sets no data.warm_start_plateau_loss, so no attempt is checked for a plateau"
    return None


@rule("model.warm_start.retry_init_std")
def _no_retry(p: Parts) -> str | None:
    if warm_started(p.model) and p.model.warm_start.max_attempts == 1:
        return "model.warm_start.max_attempts=1: a stuck warm start is not retried"
    return None


@rule("data.teacher_*", "data.warm_start_*")
def _no_warm_start(p: Parts) -> str | None:
    if not warm_started(p.model):
        return (
            "this model is not warm-started from the task's teacher (model.warm_start=null, or a model "
            "loaded from a directory), so the teacher's settings are never read"
        )
    return None


@rule("reward.timeout_s")
def _exact_verifier(p: Parts) -> str | None:
    if p.reward.verifier == "exact":  # reward=math's in-process comparison
        return "reward.verifier=exact compares in-process and never times out; reward.verifier=math_verify uses it"
    return None


# ------------------------------------------------------------------------------------------------ driver
def find_inert(parts: Parts, keys: list[str]) -> dict[str, str]:
    """{key: why it is inert} for each of `keys` (dotted config keys) that some rule finds inert."""
    found: dict[str, str] = {}
    for key in keys:
        reasons = [
            why for r in RULES if any(fnmatch.fnmatchcase(key, pat) for pat in r.patterns) if (why := r.check(parts))
        ]
        if reasons:
            found[key] = "; ".join(dict.fromkeys(reasons))
    return found


def command_line_keys() -> dict[str, str]:
    """{key: value} of this job's command-line (and sweep) overrides that set a config key: group choices
    (`algo=ppo`), deletions (`~key`) and hydra.* keys are left out. {} outside a Hydra app."""
    # deferred: hydra only to read the command line's overrides; this module needs only omegaconf otherwise
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not HydraConfig.initialized():
        return {}
    hc = HydraConfig.get()
    groups = set(hc.runtime.choices)
    keys: dict[str, str] = {}
    for override in OverridesParser.create().parse_overrides(list(hc.overrides.task)):
        key = override.get_key_element().lstrip("+~")
        if override.is_delete() or key in groups or key.startswith("hydra.") or "@" in key:
            continue
        keys[key] = override.get_value_element_as_str()
    return keys


def warn_inert(cfg: DictConfig, keys: dict[str, str] | None = None, **components: Any) -> dict[str, str]:
    """Warn about each inert key of `keys` ({key: value}; default: this job's command line) and write them to
    `<run_dir>/inert.json` ({} when none). `components`: algo, advantage, task, reward, sampler, model."""
    keys = command_line_keys() if keys is None else keys
    found = find_inert(Parts(cfg=cfg, **components), list(keys))
    for key, why in found.items():
        log.warning("%s=%s has no effect in this run: %s", key, keys[key], why)
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / INERT_FILE).write_text(json.dumps(found, indent=2))
    return found
