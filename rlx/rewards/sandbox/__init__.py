"""A sandbox for untrusted completions: a pre-started parent forks one isolated child per sample.

See `runner.py` for the isolation layers and `pool.py` for the trainer-side client.
"""
