"""Builds one jail and execs a fresh interpreter (the zygote) as its PID 1: `python -m rlx.rewards.sandbox.jail`.

Started by the checker (rlx.rewards.sandbox.session) as a fresh process, it reads one JSON frame on stdin:
{"uid": host uid to become when started as root, "binds": [[host path, jail path], ...], "links": [[jail path,
target], ...], "files": {path under /opt/rlx: text}, "python": interpreter, "sys_path": [...], "preload": [...]},
then:

1. opens every bind source (O_PATH) while it still may, and as root becomes `uid` (no capability left);
2. unshares user, mount, PID, network, IPC, UTS and cgroup namespaces, mapping uid/gid 0 inside to itself;
3. forks PID 1 of the new PID namespace, which mounts a tmpfs as the new root, binds each source read-only at
   its path (nothing else of the host: no home, no checkout, no launch directory, no data, no /run, no /etc
   beyond the loader's cache), writes the rlx files the harness needs under /opt/rlx, mounts its own /proc,
   pivots into it, makes every mount read-only, and execs the zygote.

The same steps run unprivileged (user namespaces) and as root. Any failure before the exec is reported as an
H frame {"error": one line} that says what is missing and how to get it.
"""

from __future__ import annotations

import json
import os
import sys

from rlx.rewards.sandbox import frames, syscalls

NAMESPACES = (
    syscalls.CLONE_NEWUSER
    | syscalls.CLONE_NEWNS
    | syscalls.CLONE_NEWPID
    | syscalls.CLONE_NEWNET
    | syscalls.CLONE_NEWIPC
    | syscalls.CLONE_NEWUTS
    | syscalls.CLONE_NEWCGROUP
)
STAGE = "/tmp"  # where the root is staged, in the jail's mount namespace only (the host's /tmp is untouched)
OLD_ROOT = "/.oldroot"
BOOT = "import sys, json; sys.path[:0] = json.loads(sys.argv[1])['sys_path']; from {m} import main; main()"
USERNS_HELP = (
    "unprivileged user namespaces are unavailable ({err}); enable them (sysctl kernel.unprivileged_userns_clone=1 "
    "and user.max_user_namespaces>0; Ubuntu >= 23.10: kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor "
    "profile for python; Docker: --security-opt seccomp=unconfined --security-opt apparmor=unconfined)"
)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _stage_root(config: dict) -> None:
    """The jail's filesystem, built at /tmp (a tmpfs mounted in this mount namespace only): each allowed source
    bound at its own path, the rlx files, empty mount points; then all of it made read-only."""
    syscalls.mount(None, "/", None, syscalls.MS_REC | syscalls.MS_PRIVATE)
    # opened before the tmpfs covers STAGE: a source under /tmp (a virtualenv there, say) stays reachable
    sources = [(os.open(src, os.O_PATH | os.O_CLOEXEC), dest, os.path.isdir(src)) for src, dest in config["binds"]]
    syscalls.mount("tmpfs", STAGE, "tmpfs", syscalls.MS_NOSUID | syscalls.MS_NODEV, "size=64m,mode=0755")
    for fd, dest, is_dir in sources:
        target = STAGE + dest
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if is_dir:
            os.makedirs(target, exist_ok=True)
        elif not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        syscalls.mount(f"/proc/self/fd/{fd}", target, None, syscalls.MS_BIND | syscalls.MS_REC)
        os.close(fd)
    for dest, link_target in config["links"]:
        if not os.path.lexists(STAGE + dest):
            os.symlink(link_target, STAGE + dest)
    for name, text in config["files"].items():
        path = f"{STAGE}/opt/rlx/{name}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    for directory, mode in (("/proc", 0o555), ("/tmp", 0o1777), ("/dev/shm", 0o1777), (OLD_ROOT, 0o700)):
        os.makedirs(STAGE + directory, exist_ok=True)
        os.chmod(STAGE + directory, mode)
    syscalls.make_read_only_tree(STAGE)


def _enter_root() -> None:
    """In PID 1 of the jail: pivot into the staged root, mount this PID namespace's /proc, drop the host's tree."""
    syscalls.die_with_parent()
    syscalls.mount(None, "/", None, syscalls.MS_REC | syscalls.MS_PRIVATE)
    syscalls.mount(STAGE, STAGE, None, syscalls.MS_BIND | syscalls.MS_REC)  # a mount of this namespace's own
    os.chdir(STAGE)
    syscalls.pivot_root(".", "." + OLD_ROOT)
    os.chdir("/")
    # before the old root goes: the kernel lets a user namespace mount proc only where one is fully visible
    syscalls.mount("proc", "/proc", "proc", syscalls.MS_NOSUID | syscalls.MS_NODEV | syscalls.MS_NOEXEC)
    syscalls.umount(OLD_ROOT)
    syscalls.sethostname("sandbox")


def main() -> None:
    frame = frames.read_frame(0, 1 << 28)
    if frame is None:
        return
    config = json.loads(frame[1])
    try:
        staged = os.geteuid() == 0
        if staged:  # root stages while it can read every source, then becomes an unprivileged uid
            syscalls.unshare(syscalls.CLONE_NEWNS, "unshare(NEWNS)")
            _stage_root(config)
            uid = config["uid"]
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            except OSError as err:
                raise OSError(f"root could not become uid {uid} (reward.base_uid): {err}") from None
            syscalls._libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: the uid change cleared it; /proc/self/*_map need it
        uid, gid = os.geteuid(), os.getegid()
        try:
            syscalls.unshare(NAMESPACES, "unshare(USER|NS|PID|NET|IPC|UTS|CGROUP)")
        except OSError as err:
            raise OSError(USERNS_HELP.format(err=err)) from None
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
        if not staged:
            _stage_root(config)
        pid = os.fork()
    except OSError as err:
        frames.json_frame(1, b"H", {"error": f"sandbox unavailable: {err}"})
        sys.exit(1)
    if pid == 0:
        try:
            _enter_root()
            argv = [config["python"], "-I", "-S", "-B", "-c", BOOT.format(m="rlx.rewards.sandbox.zygote")]
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **config["env"]}
            zygote = {
                **{key: config[key] for key in ("sys_path", "preload", "harness")},
                "env": config["candidate_env"],
                # the allowed files that live under /tmp or /dev/shm, bound back over each candidate's tmpfs
                "keep": [dest for _, dest in config["binds"] if dest.startswith(("/tmp/", "/dev/shm/"))],
            }
            os.execve(config["python"], [*argv, json.dumps(zygote)], env)
        except BaseException as err:  # noqa: BLE001 - one line to the checker, whatever failed
            frames.json_frame(1, b"H", {"error": f"sandbox unavailable: building the jail failed: {err}"})
            os._exit(1)
    os.close(0)
    os.close(1)  # the checker sees end of file as soon as the zygote is gone
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) & 0x7F)


if __name__ == "__main__":
    main()
