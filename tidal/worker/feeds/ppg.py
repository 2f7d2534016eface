"""PPG's data feed: PPO's rollout feed, plus an auxiliary phase every `aux.interval` rollouts over all of them.

The aux buffer keeps only what the auxiliary phase reads, the observations and the returns, as
preallocated columns in their collected dtypes (uint8 images stay uint8), so `interval` rollouts fit.
An auxiliary minibatch is `aux.mini_batch_size` sequences of `aux.mini_batch_length` consecutive steps
of one env each; an epoch visits every sequence once, in a shuffled order.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import ConfigError
from tidal.base.feed import Trainer
from tidal.base.modes import LearnView, PolicyViews
from tidal.base.nest import leading_dim
from tidal.registry import FEED_REGISTRY
from tidal.worker.collector import steps_per_env
from tidal.worker.feeds.rollout import RolloutFeed
from tidal.worker.replay_buffer import ReplayBuffer

AUX_COLUMNS = ('obs', 'return')


@FEED_REGISTRY.register('ppg')
class AuxPhaseFeed(RolloutFeed):
    """The rollout feed, with the policy's 'aux' learn mode trained every `policy.aux.interval` rollouts.

    Needs `policy.aux` (enabled, interval, mini_batch_size, mini_batch_length, num_updates_per_train_iter) in
    the policy's config and an 'aux' view (`Policy.extra_views`).
    """

    name = 'ppg'

    @classmethod
    def memory_rows(cls, cfg: Mapping[str, Any]) -> dict[str, int]:
        """The aux buffer holds aux.interval rollouts."""
        policy = cfg['policy']
        return {'policy.aux.interval': policy['aux']['interval'] * policy['collect']['n_sample']}

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        super().__init__(cfg, views, collector, learner)
        aux = cfg.policy.aux
        self.enabled = aux.enabled
        self.envs = collector.num_envs
        self.steps = steps_per_env(self.n_sample, self.envs)  # steps per env of one rollout
        self.length = aux.mini_batch_length or self.steps
        if self.steps % self.length:
            raise ConfigError(f'policy.aux.mini_batch_length ({self.length}) must divide the steps per env of a '
                              f'rollout ({self.steps} = policy.collect.n_sample / env.collector_env_num)')
        self.mini_batch_size = aux.mini_batch_size
        self.aux_epochs = aux.num_updates_per_train_iter
        self.aux_mode: LearnView = views.view('aux', self.name)
        self.buffer = ReplayBuffer(aux.interval * self.steps * self.envs, device=views.device, seed=cfg.seed)

    def step(self, env_budget: Optional[int]) -> None:
        """One rollout's policy phase, and the aux phase when `interval` whole rollouts are in. A rollout cut
        to the run's last env steps is learnt from by the policy phase only: the run ends with it."""
        n_sample, _ = self.collection(env_budget)
        rollout = self.collector.collect(n_sample)
        self.learn(rollout)
        if not self.enabled or leading_dim(rollout) < self.steps * self.envs:
            return
        self.buffer.extend({key: rollout[key] for key in AUX_COLUMNS})
        if len(self.buffer) == self.buffer.capacity:
            self.aux_phase()

    def aux_phase(self) -> None:
        """`num_updates_per_train_iter` epochs over the buffer, then it is emptied (algorithm 1, lines 7-12)."""
        self.learner.start_phase(self.aux_mode)  # pi_old is the policy as the phase finds it
        starts = self.sequence_starts()
        offsets = torch.arange(self.length) * self.envs  # an env's consecutive steps lie `envs` rows apart
        for _ in range(self.aux_epochs):
            order = starts[torch.randperm(len(starts), generator=self.generator)]
            for first in range(0, len(order), self.mini_batch_size):
                index = (order[first:first + self.mini_batch_size, None] + offsets).flatten()
                batch = self.buffer.sample_index(index)
                del batch['index']
                batch['env_step'] = self.collector.env_step
                self.learner.train_phase('aux', self.aux_mode, batch)
        self.buffer.clear()

    def sequence_starts(self) -> torch.Tensor:
        """The first row of every sequence: rollout r, env i, sequence k starts at
        r * steps * envs + k * length * envs + i."""
        rollouts = len(self.buffer) // (self.steps * self.envs)
        rollout = torch.arange(rollouts)[:, None, None] * (self.steps * self.envs)
        sequence = torch.arange(self.steps // self.length)[None, :, None] * (self.length * self.envs)
        env = torch.arange(self.envs)[None, None, :]
        return (rollout + sequence + env).flatten()

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), 'aux_buffer': self.buffer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.buffer.load_state_dict(state['aux_buffer'])
