"""The unroll data feed: collected steps go into a trajectory buffer, kept in order per env, and each
update unrolls the policy's model from sampled (env, position) starts (MuZero).

The feed owns the replay and its sampling (uniform or prioritized); the policy turns sampled starts
into a training batch (`make_unroll_batch`: targets, reanalyze) and reports each sample's priority.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews, UnrollView
from tidal.registry import FEED_REGISTRY
from tidal.worker.feeds.replay import ReplayFeed
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.trajectory_buffer import TrajectoryBuffer


def build_trajectory_buffer(cfg: EasyDict, num_envs: int, device: Any, seed: int) -> TrajectoryBuffer:
    buffer_cfg = cfg.policy.other.replay_buffer
    per_env = -(-int(buffer_cfg.replay_buffer_size) // num_envs)
    if cfg.policy.priority:
        return PrioritizedTrajectoryBuffer(num_envs, per_env, alpha=buffer_cfg.alpha, beta=buffer_cfg.beta,
                                           anneal_step=buffer_cfg.anneal_step, device=device, seed=seed)
    return TrajectoryBuffer(num_envs, per_env, device=device, seed=seed)


@FEED_REGISTRY.register('unroll')
class UnrollFeed(ReplayFeed):
    """The replay feed's schedule (warm-up, then `update_per_collect` updates per collection of `n_sample`
    env steps) over a trajectory buffer: each update unrolls the model from `batch_size` sampled starts.

    Needs an 'unroll' view (`UnrollView`, from `Policy.extra_views`) that turns sampled starts into a batch.
    """

    name = 'unroll'
    SPEC = FeedSpec(entry_point='serial_pipeline_muzero', learns='learns from unrolled trajectories',
                    on_policy=False, async_collection=False)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Every sample is an unroll: no replay sequence options to check."""

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.unroll: UnrollView = views.view('unroll', self.name)
        super().__init__(cfg, views, collector, learner)

    def build_buffer(self, cfg: EasyDict, device: torch.device, num_envs: int) -> TrajectoryBuffer:
        return build_trajectory_buffer(cfg, num_envs, device, cfg.seed)

    def update(self) -> None:
        weight = None
        if self.priority:
            env_ids, positions, weight = self.buffer.sample_weighted(self.batch_size)
        else:
            env_ids, positions = self.buffer.sample_positions(self.batch_size)
        batch = self.unroll.make_batch(self.buffer, env_ids, positions)
        if weight is not None:
            batch['weight'] = weight
        info = self.learner.train(batch)
        if self.priority:
            self.buffer.update_priority(env_ids, positions, info['priority'])
