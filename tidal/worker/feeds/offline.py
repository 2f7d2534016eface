"""The offline feed: every update samples a fixed dataset, and no env is stepped but the evaluator's.

The dataset (`tidal.worker.offline_data`) is held as the columns of a replay buffer on the policy's device, sampled
uniformly. Its observations' mean and variance become the policy's observation statistics (its `obs_rms`, where it
declares one: `policy.collect.normalize_states`), which learning and acting then normalise by. A checkpoint keeps
the sampler's state, not the dataset: a resume reads the dataset again from its source and refuses one that
changed size.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import CheckpointError, ConfigError
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews
from tidal.registry import FEED_REGISTRY
from tidal.worker.feeds.common import Feed
from tidal.worker.feeds.nstep import extend_to_nstep
from tidal.worker.offline_data import DATA_KEY, OfflineDataset, as_tensors, check_dataset_keys, load_offline_dataset
from tidal.worker.replay_buffer import ReplayBuffer


@FEED_REGISTRY.register('offline')
class OfflineFeed(Feed):
    """One update per step, on a batch drawn uniformly from the dataset (n-step windows inside its episodes where
    the policy's `nstep` asks)."""

    name = 'offline'
    # a step reads nothing back from its update: a seed group makes its seeds' updates together, stacked
    SPEC = FeedSpec(entry_point='serial_pipeline_offline', learns='learns offline from a dataset', on_policy=False,
                    async_collection=False, groups=True, offline=True)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        policy = cfg['policy']
        if policy.get('priority'):
            raise ConfigError('policy.priority: an offline run samples its dataset uniformly; set priority=False')
        check_dataset_keys(cfg)

    @classmethod
    def warmup(cls, cfg: Mapping[str, Any]) -> tuple[str, int]:
        return DATA_KEY, 0

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.check_config(cfg)
        self.learner = learner
        self.batch_size = cfg.policy.learn.batch_size
        self.train_epoch: Optional[int] = cfg.policy.learn.get('train_epoch')
        self.nstep = cfg.policy.get('nstep', 1)  # n-step windows (the policies that read them declare the key)
        self.data: OfflineDataset = load_offline_dataset(cfg)
        columns = as_tensors(self.data.columns)
        self.buffer = ReplayBuffer(self.data.size, device=views.device, seed=cfg.seed)
        self.data.columns = {}  # the buffer holds them now
        self.buffer.extend(columns)
        statistics = views.collect.running_statistics().get('obs_rms')
        if statistics is not None:
            statistics.load_state_dict(dataset_moments(columns['obs']))

    def reference_scores(self) -> Optional[tuple[float, float]]:
        return self.data.ref_scores

    def train_iter_budget(self) -> Optional[int]:
        """`policy.learn.train_epoch` passes over the dataset, in batches of `batch_size` (DI-engine's epochs)."""
        epochs = self.train_epoch
        return None if epochs is None else epochs * math.ceil(len(self.buffer) / self.batch_size)

    def warmed_up(self) -> bool:
        return True

    def step(self, env_budget: Optional[int]) -> None:
        batch = self.buffer.sample(self.batch_size)
        if self.nstep > 1:  # the dataset's episodes lie end to end, one row after another
            batch = extend_to_nstep(self.buffer, batch, self.nstep, stride=1)
        self.learner.train(batch)

    def state_dict(self) -> dict[str, Any]:
        return {'sampler': self.buffer.sampling_state(), 'transitions': len(self.buffer)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state['transitions'] != len(self.buffer):
            raise CheckpointError(f"{DATA_KEY} '{self.data.source}' holds {len(self.buffer)} transitions, but the run "
                                  f"was checkpointed on {state['transitions']}: it is not the dataset the run learnt from")
        self.buffer.load_sampling_state(state['sampler'])


def dataset_moments(obs: torch.Tensor) -> dict[str, torch.Tensor]:
    """A `RunningMeanStd` state holding the mean and population variance of every observation of the dataset."""
    flat = obs.to(torch.float64)
    return {'mean': flat.mean(dim=0).cpu(), 'var': flat.var(dim=0, unbiased=False).cpu(),
            'count': torch.tensor(float(len(flat)), dtype=torch.float64)}
