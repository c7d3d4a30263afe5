"""What a jail may see: the allow-list of host paths bound read-only into it, computed in the checker.

Bound: the system's libraries and tools (/usr and the merged-/usr links), the loader's cache, five character
devices, the interpreter's own installation (its prefix: the standard library), and for each requested package
its files in site-packages together with its dependencies' (from the installed metadata). Copied (not bound):
the rlx modules the harness needs, as a namespace package under /opt/rlx, so nothing else of the checkout is
there. Not there: home directories, the checkout, the launch directory, data files, /etc (but the loader's
cache), /run, /var, /srv, /mnt, /media, /opt, /sys and the host's /proc.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
JAIL_MODULES = ("rlx.rewards.sandbox.zygote", "rlx.rewards.sandbox.frames", "rlx.rewards.sandbox.syscalls")


def _module_file(module: str) -> tuple[str, str]:
    """(path under /opt/rlx, source text) of an rlx module, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"sandbox module {module!r} is not a Python source file")
    return module.replace(".", "/") + ".py", Path(spec.origin).read_text(encoding="utf-8")


def _requirement_names(dist: importlib.metadata.Distribution) -> list[str]:
    """Names of the distributions `dist` needs (markers evaluated here, extras left out)."""
    names = []
    for text in dist.requires or ():
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        try:
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
        except Exception:  # noqa: BLE001 - a marker this packaging version cannot evaluate: leave it out
            continue
        names.append(requirement.name)
    return names


def package_paths(packages: Sequence[str]) -> tuple[list[str], list[str]]:
    """(top-level paths in site-packages, the site-packages directories) of `packages` and their dependencies."""
    seen: set[str] = set()
    paths: set[str] = set()
    sites: set[str] = set()
    todo = list(packages)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            if name in {p.lower().replace("_", "-") for p in packages}:
                raise ValueError(f"sandbox package {name!r} is not installed") from None
            continue  # an optional dependency that is not installed
        site = os.path.realpath(str(dist.locate_file("")))
        sites.add(site)
        for file in dist.files or ():
            top = file.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            path = os.path.join(site, top)
            if os.path.exists(path):
                paths.add(path)
        todo.extend(_requirement_names(dist))
    return sorted(paths), sorted(sites)


def jail_config(
    harness: str, modules: Sequence[str], packages: Sequence[str], preload: Sequence[str], env: dict, uid: int
) -> dict:
    """The JSON the jail (rlx.rewards.sandbox.jail) builds itself from."""
    python = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    binds, links = [], []
    for path in SYSTEM:
        if os.path.islink(path):
            links.append([path, os.readlink(path)])
        elif os.path.exists(path):
            binds.append([path, path])
    binds += [[d, d] for d in DEVICES if os.path.exists(d)]
    if not any(prefix == b or prefix.startswith(b + "/") for b, _ in binds):
        binds.append([prefix, prefix])
    if not any(python.startswith(b + "/") for b, _ in binds):
        binds.append([python, python])
    site_paths, sites = package_paths(packages)
    binds += [[p, p] for p in site_paths]
    files = dict(_module_file(m) for m in (*JAIL_MODULES, harness, *modules))
    return {
        "harness": harness,
        "candidate_env": dict(env),
        "uid": uid,
        "binds": binds,
        "links": links,
        "files": files,
        "python": python,
        "sys_path": ["/opt/rlx", *sites],
        "preload": [harness, *preload],
        "env": {k: v for k, v in env.items()},
    }
