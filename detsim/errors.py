"""The core's one error for a bad configuration value, below every sub-package: the model raises it for a
field, the host for a size the memory cannot hold, the command line turns it into one line and exit 2."""


class ConfigError(ValueError):
    """Invalid configuration value; the message names the offending field or flag."""


__all__ = ["ConfigError"]
