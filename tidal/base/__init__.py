"""The ground floor: the contracts every other part of tidal is built on.

Mode views and the records they receive (`modes`), the Policy, Collector and DataFeed protocols, the errors,
the class-defaults machinery, device resolution and one nest module. Nothing here imports tidal
above this package.
"""
from tidal.base.collector import Collector, EpisodeStats
from tidal.base.device import policy_device, resolve_device
from tidal.base.errors import CheckpointError, ConfigError, EnvError, TidalError, UnknownNameError
from tidal.base.feed import DataFeed, FeedSpec, Trainer
from tidal.base.modes import (CollectMode, CollectView, EnvLayout, EvalMode, EvalView, LearnMode, LearnView, PolicyViews,
                              Timestep, TrajectoryStore, UnrollView)
from tidal.base.policy import PolicyLike

__all__ = ['CheckpointError', 'CollectMode', 'CollectView', 'Collector', 'ConfigError', 'DataFeed', 'EnvError',
           'EnvLayout', 'EpisodeStats', 'EvalMode', 'EvalView', 'FeedSpec', 'LearnMode', 'LearnView', 'PolicyLike',
           'PolicyViews', 'TidalError', 'Timestep', 'TrajectoryStore', 'Trainer', 'UnknownNameError', 'UnrollView',
           'policy_device', 'resolve_device']
