"""The unroll data feed: collected steps go into a trajectory buffer, kept in order per env, and each
update unrolls the policy's model from sampled (env, position) starts (MuZero).

The feed owns the replay and its sampling (uniform or prioritized); the policy turns sampled starts
into a training batch (`make_unroll_batch`: targets, reanalyze) and reports each sample's priority.
"""
from __future__ import annotations

from typing import Any, Optional

from easydict import EasyDict

from tidal.entry.replay_feed import WARMUP_CHUNK
from tidal.errors import ConfigError
from tidal.policies.base import Policy
from tidal.worker.collector import SampleCollector
from tidal.worker.learner import Learner
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.trajectory_buffer import TrajectoryBuffer


def build_trajectory_buffer(cfg: EasyDict, num_envs: int, device: Any, seed: int) -> TrajectoryBuffer:
    buffer_cfg = cfg.policy.other.replay_buffer
    per_env = -(-int(buffer_cfg.replay_buffer_size) // num_envs)
    if cfg.policy.priority:
        return PrioritizedTrajectoryBuffer(num_envs, per_env, alpha=buffer_cfg.alpha, beta=buffer_cfg.beta,
                                           anneal_step=buffer_cfg.anneal_step, device=device, seed=seed)
    return TrajectoryBuffer(num_envs, per_env, device=device, seed=seed)


class UnrollFeed:
    """After `random_collect_size` steps of random actions, each step collects `n_sample` env steps and
    makes `update_per_collect` updates of `batch_size` unrolled samples."""

    def __init__(self, cfg: EasyDict, policy: Policy, collector: SampleCollector, learner: Learner) -> None:
        if not hasattr(policy, 'make_unroll_batch'):
            raise ConfigError(f"policy '{cfg.policy.type}' has no make_unroll_batch, which the unroll pipeline "
                              f'needs to turn replayed starts into a batch')
        self.policy, self.collector, self.learner = policy, collector, learner
        self.batch_size = cfg.policy.learn.batch_size
        self.update_per_collect = cfg.policy.learn.update_per_collect
        self.n_sample = cfg.policy.collect.n_sample
        self.random_collect_size = cfg.policy.random_collect_size
        self.priority = cfg.policy.priority
        self.buffer = build_trajectory_buffer(cfg, collector.env.num_envs, policy.device, cfg.seed)

    def warmed_up(self) -> bool:
        return self.collector.env_step >= self.random_collect_size

    def step(self, env_budget: Optional[int]) -> None:
        """A chunk of the warm-up, or one collection and its updates."""
        if not self.warmed_up():
            steps = min(self.random_collect_size - self.collector.env_step, WARMUP_CHUNK)
            if env_budget is not None:
                steps = min(steps, env_budget)
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
        batch = self.policy.make_unroll_batch(self.buffer, env_ids, positions)
        if weight is not None:
            batch['weight'] = weight
        info = self.learner.train(batch)
        if self.priority:
            self.buffer.update_priority(env_ids, positions, info['priority'])

    def state_dict(self) -> dict[str, Any]:
        return {'buffer': self.buffer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffer.load_state_dict(state['buffer'])
