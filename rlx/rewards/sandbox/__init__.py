"""The sandbox for untrusted completions. The API: rlx.rewards.sandbox.session (Sandbox.map, Session); the
checker's end of one jail: jail_process.py; the jail: jail.py, zygote.py, syscalls.py, allowlist.py;
docs/sandbox.md has the threat model. Both code rewards (reward=unit_tests, reward=triton) run on it; the
previous root-only fork-server sandbox is gone.
"""
