"""n-step windows of the replay feed (`policy.nstep`): they stop at an episode's end and at the newest data, and a
policy folds them into R = sum gamma^k r_k bootstrapped with gamma^len."""
from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tidal.entry.pipelines import train
from tidal.entry.setup import load_config
from tidal.base.errors import ConfigError
from tidal.policies.common import td_reward
from tidal.rl_utils import nstep_return, td_target
from tidal.worker.feeds.nstep import extend_to_nstep
from tidal.worker.replay_buffer import ReplayBuffer


def two_env_buffer() -> ReplayBuffer:
    """Two envs, step-major rows (env 0 at even rows, env 1 at odd ones), 5 steps each.

    env 0: rewards 1, 2, 3, 4, 5; its step 2 is truncated (a time limit), the others go on.
    env 1: rewards 10, 20, 30, 40, 50; its step 1 terminates.
    next_obs is 100 * env + step, so the window's last step is read off it.
    """
    buffer = ReplayBuffer(16, seed=0)
    for step in range(5):
        buffer.extend({
            'obs': torch.tensor([[float(step)], [float(step)]]),
            'reward': torch.tensor([float(step + 1), 10.0 * (step + 1)]),
            'next_obs': torch.tensor([[float(step)], [100.0 + step]]),
            'terminated': torch.tensor([False, step == 1]),
            'truncated': torch.tensor([step == 2, False]),
        })
    return buffer


def window(buffer: ReplayBuffer, slots: list[int], n: int) -> dict:
    return extend_to_nstep(buffer, buffer.sample_index(torch.tensor(slots)), n, stride=2)


def test_a_window_stops_after_a_truncated_step_and_bootstraps_from_its_true_next_obs():
    batch = window(two_env_buffer(), [0, 2, 4, 6], n=3)  # env 0 from steps 0, 1, 2, 3
    assert batch['nstep_len'].tolist() == [3, 2, 1, 2]  # step 2 ends its episode; step 3's window meets the newest
    assert batch['nstep_reward'].tolist() == [[1, 2, 3], [2, 3, 0], [3, 0, 0], [4, 5, 0]]
    assert batch['next_obs'].flatten().tolist() == [2.0, 2.0, 2.0, 4.0]  # the last step's own next_obs
    assert batch['terminated'].tolist() == [False, False, False, False]  # truncation still bootstraps


def test_a_window_that_meets_a_termination_does_not_bootstrap():
    batch = window(two_env_buffer(), [1, 3, 5], n=3)  # env 1 from steps 0, 1, 2
    assert batch['nstep_len'].tolist() == [2, 1, 3]
    assert batch['nstep_reward'].tolist() == [[10, 20, 0], [20, 0, 0], [30, 40, 50]]
    assert batch['terminated'].tolist() == [True, True, False]
    assert batch['next_obs'].flatten().tolist() == [101.0, 101.0, 104.0]


def test_a_window_never_runs_past_the_newest_transition_after_the_ring_wraps():
    buffer = ReplayBuffer(6, seed=0)  # holds the last 3 steps of each env
    for step in range(5):
        buffer.extend({'reward': torch.tensor([float(step), float(step)]), 'next_obs': torch.zeros(2, 1),
                       'terminated': torch.zeros(2, dtype=torch.bool), 'truncated': torch.zeros(2, dtype=torch.bool)})
    newest_env0 = (5 - 1) * 2 % 6  # slot of env 0's step 4
    batch = extend_to_nstep(buffer, buffer.sample_index(torch.tensor([newest_env0])), 3, stride=2)
    assert batch['nstep_len'].tolist() == [1] and batch['nstep_reward'].tolist() == [[4.0, 0.0, 0.0]]


def test_the_nstep_target_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0], [10.0, 20.0, 0.0]])
    length = torch.tensor([3, 2])
    ret, discount = nstep_return(rewards, length, 0.9)
    assert_close(ret, torch.tensor([1 + 0.9 * 2 + 0.81 * 3, 10 + 0.9 * 20]))
    assert_close(discount, torch.tensor([0.729, 0.81]))
    target = td_target(ret, torch.tensor([5.0, 5.0]), torch.tensor([False, True]), discount)
    assert_close(target, torch.tensor([1 + 1.8 + 2.43 + 0.729 * 5, 28.0]))


def test_a_one_step_batch_keeps_its_reward_and_gamma():
    reward = torch.tensor([1.0, 2.0])
    got, discount = td_reward({'reward': reward}, 0.99)
    assert got is reward and discount == 0.99


def test_nstep_and_sequences_are_refused_together():
    with pytest.raises(ConfigError, match=r'policy\.nstep: n-step windows start at single transitions'):
        train('pendulum_sac', max_env_step=300, progress=False,
              overrides=['policy.nstep=3', 'policy.collect.unroll_len=2'])


def test_a_policy_that_reads_no_windows_has_no_nstep_key():
    with pytest.raises(ConfigError, match=r"unknown config key 'policy\.nstep'"):
        load_config('pendulum_taac', overrides=['policy.nstep=3'])


@pytest.mark.parametrize('config', ['pendulum_sac', 'cartpole_discrete_sac', 'pendulum_sac_v'])
def test_nstep_sac_trains_and_resumes_its_windows(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = train(config, seed=0, max_env_step=300, progress=False,
                   overrides=['policy.nstep=3', 'policy.random_collect_size=100', 'policy.learn.batch_size=32',
                              'env.n_evaluator_episode=1'])
    assert result.evals[-1]['train_iter'] > 0


def test_a_seed_group_learns_from_nstep_windows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    group = train('pendulum_sac', seeds=[0, 1], max_env_step=250, progress=False,
                  overrides=['policy.nstep=3', 'policy.random_collect_size=100', 'policy.learn.batch_size=32',
                             'env.n_evaluator_episode=1', 'seed_group.share=stacked'])
    assert all(run.evals[-1]['train_iter'] > 0 for run in group.runs)
