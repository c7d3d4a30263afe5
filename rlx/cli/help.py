"""`python -m rlx --help`: rlx's config groups, each option with the one-line description its YAML file's
header comment gives, read when the help is printed (no list is kept by hand). Files named `_*.yaml` (a
group's shared base, e.g. conf/algo/_base.yaml) are not options and are left out.

conf/hydra/help/rlx.yaml is Hydra's help config for rlx; its template calls the `rlx_help` resolver
registered here. A group's own description is the comment on its line of conf/config.yaml's defaults list.
Standard library, OmegaConf and rlx.cli.paths only, so the help answers in about a second.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from omegaconf import OmegaConf

from rlx.cli.paths import config_dirs

# A sentence ends at ". " — except after an ellipsis or the abbreviations these comments use.
SENTENCE_END = re.compile(r"(?<!\.)(?<!\bal)(?<!e\.g)(?<!i\.e)(?<!\bvs)(?<!\bcf)(?<!\b[Ee]q)(?<!\bDr)(?<!\bMr)\.\s")
HYDRA_GROUPS = ("hydra/launcher", "hydra/sweeper")  # Hydra's own groups a user of rlx picks from
DEFAULT_LINE = re.compile(r"^\s*-\s*(?P<group>[\w/]+)\s*:\s*(?P<option>[\w.]+)\s*(?:#\s*(?P<comment>.*))?$")


def describe(path: Path) -> str:
    """The first sentence of the file's header comment (the comment lines before its first key)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            if stripped:
                break
            continue
        text = stripped.lstrip("#").strip()
        if text.startswith("@"):  # a Hydra header (`# @package _global_`), not prose
            continue
        lines.append(text)
    sentence = SENTENCE_END.split(" ".join(lines).strip() + " ", maxsplit=1)[0].strip()
    return sentence[:-1] if sentence.endswith(".") and not sentence.endswith("..") else sentence


def defaults(conf: Path) -> dict[str, tuple[str, str]]:
    """{group: (default option, description)} from the defaults list of conf/config.yaml and its comments."""
    out: dict[str, tuple[str, str]] = {}
    for line in (conf / "config.yaml").read_text(encoding="utf-8").splitlines():
        match = DEFAULT_LINE.match(line)
        if match and not match["group"].startswith(("override", "hydra")):
            out[match["group"]] = (match["option"], (match["comment"] or "").strip())
    return out


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def groups_text(width: int | None = None) -> str:
    """Every group of conf/ (and sweeps/), its options with their descriptions; `*` marks the default."""
    width = width or min(120, shutil.get_terminal_size((120, 24)).columns)
    conf, sweeps = config_dirs()
    chosen = defaults(conf)
    dirs = {p.name: p for p in conf.iterdir() if p.is_dir() and p.name != "hydra"}
    if sweeps.is_dir():
        dirs["sweeps"] = sweeps
    blocks = []
    for group in sorted(dirs):
        default, about = chosen.get(group, ("", ""))
        if group == "sweeps":
            about = about or "ready sweeps: python -m rlx +sweeps=NAME runs one as a multirun (no -m needed)"
        elif group not in chosen:
            about = about or f"optional: +{group}=NAME"
        lines = [clip(f"{group}  {about}".rstrip(), width)]
        options = {p.stem: describe(p) for p in sorted(dirs[group].glob("*.yaml")) if not p.stem.startswith("_")}
        blocks.append(option_lines(lines, options, default, width))
    for group in HYDRA_GROUPS:
        own = {p.stem: describe(p) for p in sorted((conf / group).glob("*.yaml"))}
        options = {name: own.get(name, "(a Hydra plugin)") for name in sorted({*hydra_options(group), *own})}
        if options:
            about = "where a sweep's runs execute" if group.endswith("launcher") else "how a sweep picks its runs"
            blocks.append(option_lines([f"{group}  {about} (default: basic)"], options, "basic", width))
    return "\n\n".join(blocks)


def option_lines(lines: list[str], options: dict[str, str], default: str, width: int) -> str:
    pad = max(map(len, options), default=0) + 2
    for name, about in options.items():
        lines.append(clip(f"  {'*' if name == default else ' '} {name.ljust(pad)}{about}".rstrip(), width))
    return "\n".join(lines)


def hydra_options(group: str) -> list[str]:
    """The options Hydra itself sees for one of its groups (its own, installed plugins', rlx's)."""
    # deferred: this module imports no hydra at top; only this query reads Hydra's state
    from hydra.core.global_hydra import GlobalHydra

    if not GlobalHydra.instance().is_initialized():
        return []
    return list(GlobalHydra.instance().config_loader().get_group_options(group))


def algorithms() -> str:
    """The algo presets, comma-separated (conf/algo/*.yaml, shared bases `_*.yaml` left out)."""
    conf, _ = config_dirs()
    return ", ".join(sorted(p.stem for p in (conf / "algo").glob("*.yaml") if not p.stem.startswith("_")))


def resolve(part: str = "groups") -> str:
    """The `rlx_help` resolver: `${rlx_help:groups}`, `${rlx_help:algos}`. `$` is doubled because Hydra passes
    the help through string.Template."""
    parts = {"groups": groups_text, "algos": algorithms}
    if part not in parts:
        raise ValueError(f"rlx_help: unknown part {part!r} (known: {', '.join(parts)})")
    return parts[part]().replace("$", "$$")


def register() -> None:
    if not OmegaConf.has_resolver("rlx_help"):
        OmegaConf.register_new_resolver("rlx_help", resolve)
