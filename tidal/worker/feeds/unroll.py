"""The unroll data feed: collected steps go into a trajectory buffer, kept in order per env, and each
update unrolls the policy's model from sampled (env, position) starts (MuZero).

The feed owns the replay and its sampling (uniform or prioritized); the policy turns sampled starts
into a training batch (`make_unroll_batch`: targets, reanalyze) and reports each sample's priority.
"""
from __future__ import annotations

from typing import Any, Optional

from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews, UnrollView
from tidal.registry import FEED_REGISTRY
from tidal.worker.feeds.common import Feed, warmup_steps
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
class UnrollFeed(Feed):
    """After `random_collect_size` steps of random actions, each step collects `n_sample` env steps and
    makes `update_per_collect` updates of `batch_size` unrolled samples.

    Needs an 'unroll' view (`UnrollView`, from `Policy.extra_views`) that turns sampled starts into a batch.
    """

    name = 'unroll'
    SPEC = FeedSpec(entry_point='serial_pipeline_muzero', learns='learns from unrolled trajectories',
                    on_policy=False, async_collection=False)

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.unroll: UnrollView = views.view('unroll', self.name)
        self.collector, self.learner = collector, learner
        self.batch_size = cfg.policy.learn.batch_size
        self.update_per_collect = cfg.policy.learn.update_per_collect
        self.n_sample = cfg.policy.collect.n_sample
        self.random_collect_size = cfg.policy.random_collect_size
        self.priority = cfg.policy.priority
        self.buffer = build_trajectory_buffer(cfg, collector.num_envs, views.device, cfg.seed)

    def warmed_up(self) -> bool:
        return self.collector.env_step >= self.random_collect_size

    def step(self, env_budget: Optional[int]) -> None:
        """A chunk of the warm-up, or one collection and its updates."""
        if not self.warmed_up():
            steps = warmup_steps(self.collector, self.random_collect_size, env_budget)
            self.buffer.extend(self.collector.collect(steps, random=True))
            return
        self.buffer.extend(self.collector.collect(self.n_sample))
        for _ in range(self.update_per_collect):
            self.update()

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

    def state_dict(self) -> dict[str, Any]:
        return {'buffer': self.buffer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffer.load_state_dict(state['buffer'])
