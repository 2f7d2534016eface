"""The Collector protocol: what the run shell and the data feeds may ask of a collector, local or remote."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

import numpy as np


@dataclass
class EpisodeStats:
    """Returns and lengths of the episodes finished since the last `pop`."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)

    def add(self, done: np.ndarray, episode_return: np.ndarray, episode_length: np.ndarray) -> None:
        """Record the envs of a batched step whose episode ended (`done`)."""
        if done.any():
            self.returns.extend(episode_return[done].tolist())
            self.lengths.extend(episode_length[done].tolist())

    def pop(self) -> 'EpisodeStats':
        stats = EpisodeStats(self.returns, self.lengths)
        self.returns, self.lengths = [], []
        return stats


class Collector(Protocol):
    """Steps envs with a policy's collect mode and hands back training samples, step-major.

    `collect(n)` gives the samples of ceil(n / num_envs) steps of every env (see `EnvLayout`);
    `random=True` acts with the collect mode's `random_action` (the warm-up).
    """

    env_step: int           # env steps collected so far, over all envs
    episodes: EpisodeStats  # episodes finished since the run last logged them

    @property
    def num_envs(self) -> int: ...
    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]: ...
    def reset(self, seed: Optional[int] = None) -> None: ...
    def monitor(self) -> dict[str, float]: ...  # collection figures for the train log ({} if none)
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]: ...
    def close(self) -> None: ...
