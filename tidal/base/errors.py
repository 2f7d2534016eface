"""Exceptions a user can cause. The CLI prints their message as one line and exits non-zero."""
from typing import Any


def one_line(value: Any) -> str:
    """`str(value)` with its line breaks and runs of spaces folded, to quote inside a one-line error."""
    return ' '.join(str(value).split())


def first_line(err: BaseException) -> str:
    """The first line of `err`'s message (a tracking service's runs on to tracebacks and advice), else its type."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def last_line(err: BaseException) -> str:
    """The last line of `err`'s message (Ray's ends with the cause, after its tracebacks), else its type."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


class TidalError(Exception):
    """Base of every error caused by user input (config, names, files, env ids)."""


class ConfigError(TidalError, ValueError):
    """A config key, value or file is wrong; the message names the key path."""


class UnknownNameError(TidalError, KeyError):
    """A registry lookup failed; the message lists the closest registered names."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ''


class EnvError(TidalError):
    """An environment could not be created or does not fit the config."""


class CheckpointError(TidalError):
    """A checkpoint or data file is missing or does not match the run."""


class PolicyError(TidalError):
    """A policy breaks a contract the workers rely on (its training sample's columns, the names its learn mode
    monitors); the message names the policy and the method to fix."""
