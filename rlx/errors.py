"""Errors meant for the user, and how a failure at start becomes one message naming the key and the fix.

`RlxError` (and `ConfigError`) carry a message written for the user. `explain(err, ...)` turns any bad input
(an rlx error, a Hydra composition error, a missing mandatory value) or a full disk into that one message; a bug
(anything else) gets None, so the caller lets it keep its traceback. `python -m rlx` prints the message once and exits
with status 1; `RLX_DEBUG=1` shows the traceback instead.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Iterable


class RlxError(ValueError):
    pass


class ConfigError(RlxError):
    pass


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelt `word`, if one is close (difflib ratio >= 0.6)."""
    found = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def chain(err: BaseException) -> list[BaseException]:
    """err and the exceptions it was raised from or during, outermost first."""
    out: list[BaseException] = []
    link: BaseException | None = err
    while link is not None and link not in out:
        out.append(link)
        link = link.__cause__ or link.__context__
    return out


# keys a user may reach for that are set elsewhere: {key: (the key that sets it, why)}
ONE_CLIP_RANGE = "the clip range is set once, by the preset, for every policy loss"
MOVED = {
    "policy_loss.epsilon": ("algo.epsilon", ONE_CLIP_RANGE),
    "policy_loss.epsilon_high": ("algo.epsilon_high", ONE_CLIP_RANGE),
}


def moved_key(key: str, value: object = "<value>") -> str | None:
    """`policy_loss.epsilon=0.1`: the one-line refusal naming the key that sets it (None for other keys)."""
    if key not in MOVED:
        return None
    home, why = MOVED[key]
    return f"{key} is not a key: {why}. Set {home} instead: {home}={value}"


Compose = Callable[[str], "object | None"]  # drop this override, compose the rest; None if that fails too


def explain(err: BaseException, compose: Compose | None = None) -> str | None:
    """The user-facing message for a bad input, or None for a bug."""
    # deferred: rlx.errors stays stdlib-only: every rlx module imports it, rlx.score before hydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

    errors = chain(err)
    for e in errors:
        if isinstance(e, RlxError):
            return str(e)
    for e in errors:
        if isinstance(e, MissingMandatoryValue):
            key = getattr(e, "full_key", None) or "?"
            return f"{key} has no value (??? in its config): add {key}=<value> to the command line"
    first = errors[0]
    if isinstance(first, MissingConfigException):
        return _missing_option(first)
    if isinstance(first, HydraException):
        text = str(first).strip()
        bad = re.match(r"Could not override '([^']+)'", text)
        if bad:
            appended = re.search(r"use (\+\S+)", text)  # Hydra's hint holds the whole override: +key=value
            return _unknown_key(bad.group(1), appended.group(1) if appended else f"+{bad.group(1)}=...", compose)
        return _first_paragraph(text) + _cause(first)
    if isinstance(first, OmegaConfBaseException):
        return _first_paragraph(str(first))
    # deferred: rlx.errors stays stdlib-only at import (rlx.cli.disk is too, and imports nothing of rlx)
    from rlx.cli.disk import explain_disk_full

    return explain_disk_full(err)  # a full disk, whichever writer hit it; else a bug: None


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n")[0].strip()


def _cause(err: BaseException) -> str:
    cause = err.__cause__
    return f" ({_first_paragraph(str(cause)).splitlines()[0]})" if cause is not None and str(cause) else ""


def _missing_option(err) -> str:
    """`algo=grpoo`: Hydra lists the options; say which one was probably meant."""
    path = err.missing_cfg_file or ""
    group, _, name = path.rpartition("/")
    options = [o for o in err.options or [] if not o.split("/")[-1].startswith("_")]  # `_base`: a shared base
    if not group or not options:  # the primary config itself, or a file named in a defaults list
        return _first_paragraph(str(err))
    guess = did_you_mean(name, options)
    hint = f"did you mean {group}={guess}? " if guess else ""
    return f"{group}={name}: no such option. {hint}Options of {group}: {', '.join(options)}"


def _unknown_key(key: str, appended: str, compose: Compose | None) -> str:
    """`algo.epsilonn=0.1`: the key is not in the config. Suggest the closest key of the same node, or, only
    where the node's `_target_` really takes the key as an argument, `+key=value` (Hydra suggests `+` for
    every unknown key, and following it fails later, at the component's constructor)."""
    moved = moved_key(key.lstrip("+~"), appended.partition("=")[2])
    if moved:
        return moved
    parent, _, leaf = key.lstrip("+~").rpartition(".")
    cfg = compose(key) if compose is not None else None
    node = _select(cfg, parent) if cfg is not None else None
    if node is None or not hasattr(node, "keys"):
        return f"{key} is not a key of the config (a misspelling?); `python -m rlx --cfg job` prints every key"
    keys = [str(k) for k in node]  # at the top level these include the groups (algo, data, ...)
    where = parent or "the config (its groups and top-level keys)"
    guess = did_you_mean(leaf, keys)
    if guess:
        return f"{key} is not a key of {where}: did you mean {parent + '.' if parent else ''}{guess}?"
    target = node.get("_target_") if hasattr(node, "get") else None
    if target and _accepts(str(target), leaf):
        return f"{key} is not set in rlx's config, but {leaf} is an argument of {target}: add it with {appended}"
    shown = ", ".join(sorted(k for k in keys if not k.startswith("_")))
    return f"{key} is not a key of {where} (its keys: {shown})"


def _select(cfg, path: str):
    # deferred: rlx.errors stays stdlib-only (see explain)
    from omegaconf import OmegaConf

    return cfg if not path else OmegaConf.select(cfg, path, default=None)


def _accepts(target: str, name: str) -> bool:
    """Whether the callable `target` has a parameter `name` (imported lazily; False if it cannot be)."""
    try:
        # deferred: rlx.errors stays stdlib-only (see explain)
        from hydra.utils import get_object

        params = inspect.signature(get_object(target)).parameters
    except Exception:  # noqa: BLE001 — a hint, never a second error
        return False
    return name in params
