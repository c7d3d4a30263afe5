"""rlx's Hydra plugin: see `rlx_searchpath.py`."""
