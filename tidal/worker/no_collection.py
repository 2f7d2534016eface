"""The collector of a run that learns offline: it steps no env, so the run's env steps stay 0."""
from __future__ import annotations

from typing import Any, Optional

from tidal.base.collector import EpisodeStats
from tidal.base.errors import TidalError


class NoCollection:
    """A `Collector` that holds no envs: an offline feed never collects, and asking it to is a bug worth a line."""

    def __init__(self) -> None:
        self.env_step = 0
        self.episodes = EpisodeStats()

    @property
    def num_envs(self) -> int:
        return 0

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        raise TidalError('an offline run collects no env steps: its feed learns from its dataset alone')

    def reset(self, seed: Optional[int] = None) -> None:
        pass

    def monitor(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {'env_step': 0}

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        return None

    def close(self) -> None:
        pass
