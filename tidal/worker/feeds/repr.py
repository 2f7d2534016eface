"""muzero_repr's data feed: the held policy's own feed, decorated with the MuZero model's replay and schedule.

The held policy (`policy.rl_type`) learns on the latent through the feed it names ('rollout' for PPO,
'replay' for SAC), unchanged. This feed runs it, and besides:

1. takes the raw steps of every collection (the 'repr' view's `collected`) into the model's trajectory
   replay, made at the first collection for the collector's envs;
2. every `repr.training.interval` training iterations of the held policy (steps of its feed: one collection
   and its learn updates), once `initial_collect_steps` env steps are in that replay, makes
   `num_updates_per_train_iter` model updates on sequences of sampled starts, writing their priorities back.
   They run after the held feed's step, as ALF's `after_train_iter` trains its representation learner, and
   their losses are logged and guarded with the next learn update. With `interval_unit='learn_update'` the
   interval counts the held policy's learn updates instead, and the model updates run inside every
   `interval`-th one (the view's `schedule`).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector, EpisodeStats
from tidal.base.feed import DataFeed, FeedClass, FeedSpec, Trainer
from tidal.base.modes import PolicyViews, ReprView
from tidal.registry import FEED_REGISTRY, feed_class, policy_class
from tidal.worker.feeds.common import Feed
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.trajectory_buffer import TrajectoryBuffer


@FEED_REGISTRY.register('repr')
class ReprFeed(Feed):
    """The held policy's feed, plus the model's replay and updates (module docs).

    Needs a 'repr' view (`ReprView`, from `Policy.extra_views`) and `policy.repr.training` in the config;
    the spec, checks and memory are the held policy's feed's.
    """

    name = 'repr'

    @staticmethod
    def inner_class(cfg: Mapping[str, Any]) -> FeedClass:
        """The feed of the policy that `policy.rl_type` names (its registered class's `pipeline`)."""
        feed: FeedClass = feed_class(policy_class(cfg['policy']['rl_type']))
        return feed

    @classmethod
    def spec(cls, cfg: Mapping[str, Any]) -> FeedSpec:
        return cls.inner_class(cfg).spec(cfg)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        cls.inner_class(cfg).check_config(cfg)

    @classmethod
    def memory_rows(cls, cfg: Mapping[str, Any]) -> dict[str, int]:
        return cls.inner_class(cfg).memory_rows(cfg)

    @classmethod
    def warmup(cls, cfg: Mapping[str, Any]) -> tuple[str, int]:
        return cls.inner_class(cfg).warmup(cfg)

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.model: ReprView = views.view('repr', self.name)
        self.training = cfg.policy.repr.training
        self.device = views.device
        self.num_envs = collector.num_envs
        self.buffer: Optional[TrajectoryBuffer] = None  # made at the first collection
        self.inner: DataFeed = self.inner_class(cfg)(cfg, views, _StoringCollector(collector, self.store), learner)
        self.train_iters = 0  # steps of the held policy's feed so far (ALF's training iterations)
        self.per_train_iter = self.training.interval_unit == 'train_iter'
        if not self.per_train_iter:
            self.model.schedule(self.updates)

    def warmed_up(self) -> bool:
        return self.inner.warmed_up()

    def step(self, env_budget: Optional[int]) -> None:
        """One training iteration of the held policy, then the model updates it makes due."""
        self.inner.step(env_budget)
        self.train_iters += 1
        if self.per_train_iter:
            self.updates(self.train_iters)

    # ----- 1. the model's replay -------------------------------------------------------------
    def store(self) -> None:
        """The raw steps collected since the last call, into the model's replay."""
        for steps in self.model.collected():
            self.replay().extend(steps)

    def replay(self) -> TrajectoryBuffer:
        """The model's replay, made for the collector's envs the first time."""
        if self.buffer is None:
            training = self.training
            per_env = -(-training.replay_buffer_length // self.num_envs)
            if training.priority:
                self.buffer = PrioritizedTrajectoryBuffer(
                    self.num_envs, per_env, alpha=training.priority_alpha, beta=training.priority_beta,
                    device=self.device, seed=self.model.replay_seed)
            else:
                self.buffer = TrajectoryBuffer(self.num_envs, per_env, device=self.device, seed=self.model.replay_seed)
        return self.buffer

    def steps(self) -> int:
        """Env steps ever written to the model's replay."""
        return 0 if self.buffer is None else int(self.buffer.current_position().sum())

    # ----- 2. the model's updates ------------------------------------------------------------
    def updates(self, count: int) -> list[dict[str, torch.Tensor]]:
        """The model updates due after the held policy's training iteration (or learn update, by
        `interval_unit`) number `count`: their infos (none if the interval has not come round or the replay
        holds fewer than `initial_collect_steps` steps)."""
        training = self.training
        if count % training.interval or self.buffer is None or self.steps() < training.initial_collect_steps:
            return []
        return [self.update() for _ in range(training.num_updates_per_train_iter)]

    def update(self) -> dict[str, torch.Tensor]:
        """One model update on replayed unrolls, its priorities written back."""
        assert self.buffer is not None
        env_ids, positions, weight = self.sample_starts()
        info = self.model.train(self.model.make_batch(self.buffer, env_ids, positions), weight)
        if isinstance(self.buffer, PrioritizedTrajectoryBuffer):  # repr.training.priority
            self.buffer.update_priority(env_ids, positions, info['priority'])
        return info

    def sample_starts(self) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        """(env ids, positions, IS weights or None), each [mini_batch_size * mini_batch_length]: sequences of
        consecutive starts, capped at their env's newest step."""
        training, buffer = self.training, self.replay()
        weight = None
        if isinstance(buffer, PrioritizedTrajectoryBuffer):
            env_ids, starts, weight = buffer.sample_weighted(training.mini_batch_size)
        else:
            env_ids, starts = buffer.sample_positions(training.mini_batch_size)
        length = training.mini_batch_length
        newest = buffer.current_position().to(starts.device)[env_ids] - 1
        positions = torch.minimum(starts[:, None] + torch.arange(length, device=starts.device), newest[:, None])
        if weight is not None:
            weight = weight.repeat_interleave(length)
        return env_ids.repeat_interleave(length), positions.reshape(-1), weight

    # ----- exact resume ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The held policy's feed, its training iterations and the model's replay (collected data and its
        sampling generator)."""
        state = {'inner': self.inner.state_dict(), 'train_iters': self.train_iters}
        if self.buffer is not None:
            state['repr_buffer'] = self.buffer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.inner.load_state_dict(state['inner'])
        self.train_iters = int(state['train_iters'])
        if 'repr_buffer' in state:
            self.replay().load_state_dict(state['repr_buffer'])


class _StoringCollector:
    """The collector as the held policy's feed sees it: each collection's raw steps go to the model's replay
    (`store`) before the feed gets the samples."""

    def __init__(self, collector: Collector, store: Callable[[], None]) -> None:
        self._collector, self._store = collector, store

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        sample = self._collector.collect(n_sample, random)
        self._store()
        return sample

    @property
    def env_step(self) -> int:
        return self._collector.env_step

    @env_step.setter
    def env_step(self, value: int) -> None:
        self._collector.env_step = value

    @property
    def episodes(self) -> EpisodeStats:
        return self._collector.episodes

    @episodes.setter
    def episodes(self, value: EpisodeStats) -> None:
        self._collector.episodes = value

    @property
    def num_envs(self) -> int:
        return self._collector.num_envs

    def reset(self, seed: Optional[int] = None) -> None:
        self._collector.reset(seed)

    def monitor(self) -> dict[str, float]:
        return self._collector.monitor()

    def state_dict(self) -> dict[str, Any]:
        return self._collector.state_dict()

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        return self._collector.load_state_dict(state, fallback_seed)

    def close(self) -> None:
        self._collector.close()
