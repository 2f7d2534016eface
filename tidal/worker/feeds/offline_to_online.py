"""Offline to online: a policy learnt from a dataset goes on learning from its own env steps, the dataset kept in
its replay (the way IQL's and CQL's papers fine-tune).

The feed is the replay feed with two differences. At the start its replay holds the dataset (the transitions of
`policy.collect.data_path`), which new transitions join, so every batch samples both. And the policy starts from the
offline run's latest checkpoint (`policy.learn.init_checkpoint`: a run folder or a checkpoint file): its networks,
optimizers and observation statistics, which then stay fixed. A resumed run takes all of it from its own checkpoint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import ConfigError
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews
from tidal.registry import FEED_REGISTRY
from tidal.worker.checkpoint import load_checkpoint, policy_state
from tidal.worker.feeds.replay import ReplayFeed
from tidal.worker.offline_data import FIELDS, as_tensors, load_offline_dataset
from tidal.worker.replay_buffer import ReplayBuffer

INIT_KEY = 'policy.learn.init_checkpoint'


@FEED_REGISTRY.register('offline_to_online')
class OfflineToOnlineFeed(ReplayFeed):
    """Replay that starts with the dataset, for a policy that starts from its offline checkpoint."""

    name = 'offline_to_online'
    SPEC = FeedSpec(entry_point='serial_pipeline', learns='learns off-policy', on_policy=False, async_collection=True)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        if cfg['policy'].get('nstep', 1) > 1 or cfg['policy']['collect']['unroll_len'] > 1:
            raise ConfigError('policy.nstep: a replay that starts with a dataset samples single transitions; set '
                              'nstep=1 and collect.unroll_len=1')
        if cfg['policy']['collect'].get('reward_norm', 'none') != 'none':
            raise ConfigError(f"policy.collect.reward_norm is {cfg['policy']['collect']['reward_norm']!r}: a run that "
                              f"goes on online adds the env's own rewards to the dataset's, so they must stay as "
                              f"recorded; set reward_norm='none'")
        super().check_config(cfg)

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        super().__init__(cfg, views, collector, learner)
        data = load_offline_dataset(cfg)
        if data.size > self.buffer.capacity:
            raise ConfigError(f"policy.other.replay_buffer.replay_buffer_size {self.buffer.capacity} cannot hold the "
                              f"{data.size} transitions of '{data.source}' (policy.collect.data_path)")
        columns = as_tensors(data.columns)
        self.buffer.extend({field: columns[field] for field in FIELDS})  # online transitions have no next action
        path = cfg.policy.learn.init_checkpoint
        if not path:
            raise ConfigError(f"policy '{cfg.policy.type}' goes on from an offline run: set {INIT_KEY} to its run "
                              f"folder or checkpoint")
        checkpoint = Path(path) / 'ckpt' / 'latest.pt' if Path(path).is_dir() else Path(path)
        views.learn.load_state_dict(policy_state(load_checkpoint(checkpoint), checkpoint))

    def build_buffer(self, cfg: EasyDict, device: torch.device, num_envs: int) -> Any:
        """A uniform replay: the dataset's transitions and the new ones are sampled alike."""
        if cfg.policy.priority:
            raise ConfigError('policy.priority: a replay that starts with a dataset is sampled uniformly; set '
                              'priority=False')
        return ReplayBuffer(int(cfg.policy.other.replay_buffer.replay_buffer_size), device=device, seed=cfg.seed)
