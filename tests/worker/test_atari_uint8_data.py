"""Atari frame stacks stay uint8 from the env to the learner: in PPO's rollouts, PPG's aux buffer and discrete
SAC's replay buffer (a float32 copy would take four times the memory: 0.9 GB more per 10k transitions)."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip('ale_py')
pytest.importorskip('cv2')

from tidal import serial_pipeline, serial_pipeline_onpolicy  # noqa: E402
from tidal.worker.feeds.ppg import AuxPhaseFeed  # noqa: E402
from tidal.worker.feeds.replay import ReplayFeed  # noqa: E402
from tidal.worker.feeds.rollout import RolloutFeed  # noqa: E402

#: two envs, short rollouts, and one evaluation episode cut at 400 frames (100 agent steps)
SMALL = ['env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
         'env.env_kwargs.max_num_frames_per_episode=400']


def spy(monkeypatch, cls: type, method: str, read) -> list:
    """Records `read(feed, *args)` each time `cls.method` runs, before it runs."""
    seen: list = []
    original = getattr(cls, method)

    def wrapped(self, *args):
        seen.append(read(self, *args))
        return original(self, *args)
    monkeypatch.setattr(cls, method, wrapped)
    return seen


def frames(obs: torch.Tensor) -> tuple:
    return obs.dtype, tuple(obs.shape[-3:])


def test_ppo_rollouts_hold_uint8_frames(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = spy(monkeypatch, RolloutFeed, 'learn', lambda feed, rollout: frames(rollout['obs']))
    serial_pipeline_onpolicy('breakout_ppo', seed=0, max_env_step=64, progress=False,
                             overrides=[*SMALL, 'policy.collect.n_sample=32'])
    assert seen and set(seen) == {(torch.uint8, (84, 84, 4))}


def test_ppg_aux_buffer_holds_uint8_frames(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = spy(monkeypatch, AuxPhaseFeed, 'aux_phase', lambda feed: frames(feed.buffer.sample(2)['obs']))
    serial_pipeline_onpolicy('breakout_ppg', seed=0, max_env_step=64, progress=False,
                             overrides=[*SMALL, 'policy.collect.n_sample=32', 'policy.aux.interval=2',
                                        'policy.aux.mini_batch_size=2', 'policy.aux.num_updates_per_train_iter=1'])
    assert seen and set(seen) == {(torch.uint8, (84, 84, 4))}


def test_discrete_sac_replay_holds_uint8_frames(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = spy(monkeypatch, ReplayFeed, 'update',
               lambda feed: (frames(feed.buffer.sample(2)['obs']), frames(feed.buffer.sample(2)['next_obs'])))
    serial_pipeline('breakout_discrete_sac', seed=0, max_env_step=48, progress=False,
                    overrides=[*SMALL, 'policy.random_collect_size=32', 'policy.collect.n_sample=8',
                               'policy.learn.update_per_collect=1', 'policy.other.replay_buffer.replay_buffer_size=64'])
    assert seen and set(seen) == {((torch.uint8, (84, 84, 4)), (torch.uint8, (84, 84, 4)))}
