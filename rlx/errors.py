"""Errors that stop a run at start with a message meant for the user (key, bad value, fix)."""


class RlxError(ValueError):
    pass


class ConfigError(RlxError):
    pass
