"""The off-policy entry point: the run shell driving a replay feed."""
from __future__ import annotations

from typing import Iterable, Optional

from tidal.entry.replay_feed import ReplayFeed
from tidal.entry.setup import ConfigInput, load_config, start_run
from tidal.policies.base import Policy


def serial_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                    max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                    progress: bool = True) -> Policy:
    """Train an off-policy algorithm from a config path, zoo name or (main, create) pair.

    `seed` overrides the config's `seed` key; without either the run uses seed 0.
    """
    return start_run(ReplayFeed, load_config(input_cfg, seed, overrides), max_env_step, max_train_iter, progress)
