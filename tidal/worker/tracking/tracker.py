"""What a tracking service (W&B, MLflow) is told about a run, and the Protocol each backend implements.

The run's logger hands every backend the same calls: the scalars of one log event with the env step they
belong to, and at the end the run folder's files and summary. A backend knows nothing of the run loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence


@dataclass(frozen=True)
class TrackedRun:
    """Who a run is to a tracking service: its name, the seed group it belongs to, its resolved config,
    and the run id to continue (a resumed run's, kept in its checkpoint; None starts a new one)."""

    name: str
    group: Optional[str]
    config: Mapping[str, Any]
    run_dir: Path
    run_id: Optional[str] = None


class Tracker(Protocol):
    """One tracking service's run, open from the run's start to its end."""

    #: The `logger.backends` name.
    name: str
    #: The service's id of the run: saved with each checkpoint, so a resumed run continues it.
    run_id: str

    def log(self, values: Mapping[str, float], env_step: int) -> None:
        """The scalars of one log event ('train/loss', 'eval/return_mean', ...), stepped by env steps."""

    def finish(self, files: Sequence[Path], summary: Mapping[str, Any], ended_well: bool) -> None:
        """Upload the run folder's `files`, record its `summary` and close the run (`ended_well`: its budget or stop
        value ended it, not an error or a signal)."""


def flat_params(config: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """A nested config as dotted keys to leaf values ('policy.learn.lr'), for services whose parameters are flat."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        path = f'{prefix}{key}'
        if isinstance(value, Mapping) and value:
            flat.update(flat_params(value, f'{path}.'))
        else:
            flat[path] = value
    return flat
