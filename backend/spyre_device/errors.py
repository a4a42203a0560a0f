"""Errors of the device's own configuration (SPYRE_* variables and the simulator's data files)."""


class ConfigError(ValueError):
    """A SPYRE_* setting or simulator data file is wrong; the message names it and what was expected."""
