"""What every policy that learns from a fixed dataset shares: the 'offline' feed, the dataset's config keys, and
observations normalised by the dataset's statistics in learning, acting and export alike."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import torch

from tidal.base.nest import shape_tuple
from tidal.policies.base import Policy
from tidal.rl_utils.normalizer import FrozenNormalizer, RunningMeanStd

#: Normalised observations are clipped to this many standard deviations: wide enough to keep the dataset's own
#: outliers, narrow enough that a dimension the dataset never varied cannot explode an evaluation.
NORMALIZE_CLIP = 100.0


class DatasetLearning(Policy):
    """Mixin of an offline policy, listed before the policy class it extends: the feed, the keys, and the
    normaliser wrapped around that class's model, update, acting steps and exported actor."""

    config: dict = dict(
        collect=dict(
            # (str) The dataset: a Minari dataset id under MINARI_DATASETS_PATH (extra minari) or its folder, a
            # demonstration file of `tidal collect-demos` (.npz), or a tidal run folder (or checkpoint) whose saved
            # replay is the dataset.
            data_path='',
            # (bool) Normalise observations by the dataset's mean and standard deviation, in learning and in acting
            # (TD3+BC's state normalisation); the statistics are saved with the policy.
            normalize_states=False,
            # (str) The dataset's rewards: 'none' as recorded; 'return_range' times 1000 / (best - worst return of
            # its whole episodes), IQL's scaling for locomotion (DI-engine's env.reward_norm 'iql_locomotion');
            # 'standardize' less their mean, over their standard deviation.
            reward_norm='none',
        ),
        learn=dict(
            # (int >= 1 or None) Passes over the dataset after which the run ends, DI-engine's budget:
            # train_epoch * ceil(transitions / batch_size) updates, or max_train_iter where that comes first.
            train_epoch=None,
        ),
        eval=dict(
            # (float or None) Return of a random policy, for the normalised score 100 (R - min) / (max - min); None:
            # the dataset's ref_min_score (Minari), else no normalised score.
            ref_min_score=None,
            # (float or None) Return of an expert policy, the other end of the normalised score; None: the dataset's.
            ref_max_score=None,
        ),
    )
    pipeline = 'offline'

    def _build_model(self) -> Any:
        """The model, and beside it `obs_rms` where the config normalises observations (the feed fills it from
        the dataset; the checkpoint keeps it)."""
        self._obs_rms: Optional[RunningMeanStd] = None
        if self._cfg.collect.normalize_states:
            self._obs_rms = self.parts.statistics('obs_rms', RunningMeanStd(shape_tuple(self._cfg.model.obs_shape),
                                                                            self._device))
        return super()._build_model()

    def _learn_plan(self, batch: dict[str, Any]) -> Any:
        self._normalize_batch(batch)
        return super()._learn_plan(batch)

    def _acting(self, mode: str) -> Any:
        """The class's acting steps on normalised observations."""
        steps = super()._acting(mode)  # type: ignore[misc]
        if self._obs_rms is None:
            return steps
        prepare = steps.prepare
        return dataclasses.replace(steps, prepare=lambda obs: prepare(self._normalized(obs)))

    def export_actor(self, action_mask: bool = False) -> Any:
        """The class's exported actor behind the dataset's normaliser."""
        network = super().export_actor(action_mask)
        network.obs_normalizer = self._export_normalizer()
        return network

    def _normalized(self, obs: Any) -> Any:
        """`obs` normalised by the dataset's statistics (a dict's 'observation' entry, beside its action mask), or
        `obs` itself."""
        if self._obs_rms is None:
            return obs
        if isinstance(obs, dict):
            return {**obs, 'observation': self._obs_rms.normalize(obs['observation'], NORMALIZE_CLIP)}
        return self._obs_rms.normalize(obs, NORMALIZE_CLIP)

    def _normalize_batch(self, batch: dict[str, Any]) -> None:
        """Normalise a batch's `obs` and `next_obs` in place (a batch is the feed's own, made for this update)."""
        if self._obs_rms is not None:
            batch['obs'], batch['next_obs'] = self._normalized(batch['obs']), self._normalized(batch['next_obs'])

    def _export_normalizer(self) -> Optional[FrozenNormalizer]:
        """The normaliser an exported actor runs first (None: none)."""
        return None if self._obs_rms is None else self._obs_rms.frozen(NORMALIZE_CLIP)


class OnlineContinuation(Policy):
    """Mixin of an offline policy's online twin (listed first): it starts from the offline run's checkpoint and
    learns from its own env steps beside the dataset (the 'offline_to_online' feed)."""

    config: dict = dict(
        # (int >= 0) No random warm-up: the policy acts from its offline checkpoint at once.
        random_collect_size=0,
        learn=dict(
            # (str) The offline run (its folder, or a checkpoint) whose policy this run starts from: networks,
            # optimizers and observation statistics.
            init_checkpoint='',
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
    )
    pipeline = 'offline_to_online'
