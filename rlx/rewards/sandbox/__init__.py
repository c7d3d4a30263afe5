"""The sandbox for untrusted completions. The API: rlx.rewards.sandbox.session (Sandbox.map, Session); the jail:
jail.py, zygote.py, syscalls.py, allowlist.py; docs/sandbox.md has the threat model. pool.py, server.py, runner.py,
isolation.py, guard.py and records.py are the previous fork-server sandbox, still used by reward=triton.
"""
