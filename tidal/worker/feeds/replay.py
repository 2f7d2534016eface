"""The off-policy data feed: collected transitions go into a replay buffer that every update samples.

This is the one place that reads how replay is shaped: `batch_size`, `unroll_len` (sequences),
`priority` (prioritized replay and its write-back), the warm-up and the collector's env layout.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import ConfigError
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews
from tidal.registry import FEED_REGISTRY
from tidal.worker.feeds.common import Feed, warmup_steps, within_budget
from tidal.worker.feeds.nstep import extend_to_nstep
from tidal.worker.prioritized_buffer import PrioritizedReplayBuffer
from tidal.worker.replay_buffer import ReplayBuffer


def build_replay_buffer(cfg: EasyDict, device: torch.device, seed: int) -> ReplayBuffer:
    buffer_cfg = cfg.policy.other.replay_buffer
    size = int(buffer_cfg.replay_buffer_size)
    if cfg.policy.priority:
        return PrioritizedReplayBuffer(size, alpha=buffer_cfg.alpha, beta=buffer_cfg.beta,
                                       anneal_step=buffer_cfg.anneal_step, device=device, seed=seed)
    return ReplayBuffer(size, device=device, seed=seed)


@FEED_REGISTRY.register('replay')
class ReplayFeed(Feed):
    """Uniform, prioritized or sequence replay, after `random_collect_size` steps of random actions."""

    name = 'replay'

    @classmethod
    def spec(cls, cfg: Mapping[str, Any]) -> FeedSpec:
        """Without priorities a step reads nothing back from its updates, so a seed group can stack them."""
        return dataclasses.replace(cls.SPEC, groups=not cfg['policy']['priority'])

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        policy = cfg['policy']
        if policy['priority'] and policy['collect']['unroll_len'] > 1:
            raise ConfigError(f"policy.priority: prioritized replay samples single transitions, but "
                              f"policy.collect.unroll_len is {policy['collect']['unroll_len']}; set priority=False")
        if policy.get('nstep', 1) > 1 and policy['collect']['unroll_len'] > 1:
            raise ConfigError(f"policy.nstep: n-step windows start at single transitions, but "
                              f"policy.collect.unroll_len is {policy['collect']['unroll_len']}; set nstep=1")

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.check_config(cfg)
        self.collector, self.learner = collector, learner
        self.device = views.device
        self.batch_size = cfg.policy.learn.batch_size
        self.update_per_collect = cfg.policy.learn.update_per_collect
        self.n_sample = cfg.policy.collect.n_sample
        self.unroll_len = cfg.policy.collect.unroll_len
        self.priority = cfg.policy.priority
        self.random_collect_size = cfg.policy.random_collect_size
        self.nstep = cfg.policy.get('nstep', 1)  # n-step windows (the policies that read them declare the key)
        self.buffer: Any = self.build_buffer(cfg, views.device, collector.num_envs)

    def build_buffer(self, cfg: EasyDict, device: torch.device, num_envs: int) -> Any:
        """The replay this feed fills; a variant feed keeps another kind."""
        return build_replay_buffer(cfg, device, cfg.seed)

    def warmed_up(self) -> bool:
        return self.collector.env_step >= self.random_collect_size

    def collection(self, env_budget: Optional[int]) -> tuple[int, bool]:
        """A chunk of the warm-up, or one collection cut to the budget left."""
        if not self.warmed_up():
            return warmup_steps(self.collector, self.random_collect_size, env_budget), True
        return within_budget(self.n_sample, env_budget), False

    def step(self, env_budget: Optional[int]) -> None:
        """A chunk of the warm-up, or one collection and its `update_per_collect` updates."""
        n_sample, random = self.collection(env_budget)
        if random:
            self.buffer.extend(self.collector.collect(n_sample, random=True))
            return
        self.buffer.extend(self.collector.collect(n_sample))
        for _ in range(self.update_per_collect):
            self.update()

    def update(self) -> None:
        """One gradient update on a sampled batch, and its priorities written back."""
        batch = self.sample_batch()
        info = self.learner.train(batch)
        if self.priority:
            self.buffer.update_priority(batch['index'], info['priority'])

    def sample_batch(self) -> dict[str, Any]:
        """The batch of one update; a variant feed overrides how it is built."""
        if self.unroll_len > 1:
            # the collector's rows are step-major, so one env's consecutive steps lie num_envs rows apart
            return self.buffer.sample_sequence(self.batch_size, self.unroll_len, stride=self.collector.num_envs)
        batch = self.buffer.sample(self.batch_size)
        if self.nstep > 1:
            batch = extend_to_nstep(self.buffer, batch, self.nstep, stride=self.collector.num_envs)
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {'buffer': self.buffer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffer.load_state_dict(state['buffer'])
