"""Hydra search-path plugin for rlx: see `rlx_searchpath.py`."""
