import dataclasses

import numpy as np
import pytest
import torch

from tidal.envs import GymEnv
from tidal.envs.env_manager import make_env_manager
from tidal.base.errors import CheckpointError
from tidal.policies import PPOPolicy, TAACPolicy
from tidal.worker.collector import EpisodeCollector
from tidal.worker.demos import check_demos, first_mismatch, load_demos, recording_mode, save_demos


def episode(length, start=0.0):
    steps = torch.arange(length, dtype=torch.float32) + start
    return {'obs': {'observation': steps[:, None], 'action_mask': torch.ones(length, 2, dtype=torch.bool)},
            'action': torch.zeros(length, 1), 'reward': torch.ones(length), 'next_obs': {
                'observation': steps[:, None] + 1, 'action_mask': torch.ones(length, 2, dtype=torch.bool)},
            'terminated': torch.arange(length) == length - 1, 'truncated': torch.zeros(length, dtype=torch.bool)}


def test_demo_file_round_trip_keeps_columns_dtypes_and_metadata(tmp_path):
    path = save_demos(tmp_path / 'demos.npz', [episode(3), episode(2, start=10)],
                      {'env_id': 'Toy-v0', 'obs_shape': 1, 'action_shape': 1, 'returns': [3.0, 2.0]})
    assert [p.name for p in tmp_path.iterdir()] == ['demos.npz']  # written atomically, no leftovers
    demos = load_demos(path)
    assert len(demos) == 5
    assert demos.metadata['episode_lengths'] == [3, 2] and demos.metadata['returns'] == [3.0, 2.0]
    assert demos.columns['obs']['observation'][:, 0].tolist() == [0, 1, 2, 10, 11]
    assert demos.columns['obs']['action_mask'].dtype == torch.bool
    assert demos.columns['terminated'].tolist() == [False, False, True, False, True]


def test_demos_of_another_env_or_shape_are_refused(tmp_path):
    path = save_demos(tmp_path / 'd.npz', [episode(2)], {'env_id': 'Toy-v0', 'obs_shape': 1, 'action_shape': 1})
    demos = load_demos(path)
    check_demos(demos, 'Toy-v0', [1], 1, path)
    with pytest.raises(CheckpointError, match="recorded on env 'Toy-v0', but env.env_id is 'Other-v0'"):
        check_demos(demos, 'Other-v0', 1, 1, path)
    with pytest.raises(CheckpointError, match=r'has obs_shape 1, but policy.model.obs_shape is \[4\]'):
        check_demos(demos, 'Toy-v0', [4], 1, path)


def test_first_mismatch_names_env_then_obs_then_action_shape():
    recorded = {'env_id': 'Toy-v0', 'obs_shape': [3], 'action_shape': 2}
    assert first_mismatch(recorded, 'Toy-v0', 3, [2]) is None  # a shape and its one-element list are one shape
    assert first_mismatch(recorded, 'Other-v0', 4, 5) == 'env_id'
    assert first_mismatch(recorded, 'Toy-v0', [3, 1], 5) == 'obs_shape'
    assert first_mismatch(recorded, 'Toy-v0', 3, 5) == 'action_shape'
    assert first_mismatch({}, None, None, None) is None

def test_missing_or_foreign_demo_file_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="demonstration file '.*none.npz' not found"):
        load_demos(tmp_path / 'none.npz')
    np.savez(tmp_path / 'foreign.npz', x=np.zeros(2))
    with pytest.raises(CheckpointError, match='cannot be read'):
        load_demos(tmp_path / 'foreign.npz')


DEMO_COLUMNS = {'obs', 'action', 'reward', 'next_obs', 'terminated', 'truncated'}


def record(policy, env, episodes, deterministic=True, eval_mode=None):
    """`episodes` episodes of `policy` on two of `env`, as collect-demos records them."""
    manager = make_env_manager(env.make, 'base', 2)
    try:
        acting = recording_mode(policy.collect_mode, eval_mode or policy.eval_mode, deterministic)
        collector = EpisodeCollector(manager, acting, policy.device)
        collector.reset(seed=0)
        return collector.collect(episodes)
    finally:
        manager.close()


def test_deterministic_recording_resets_the_eval_trajectory_at_every_episode_start():
    """collect-demos acts with the eval mode, so the eval mode's TAAC trajectory must restart (from
    zeros) with each episode rather than carry on from the previous episode's last step."""
    torch.manual_seed(0)
    cfg = TAACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=1, actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.trajectory.max_repeat_steps = 1  # switch at every step, so the trajectory never stays at zero
    policy = TAACPolicy(cfg, enable_field=('collect', 'eval'))
    acted = []

    def eval_forward(obs):
        acted.append(policy.eval_mode.forward(obs))
        return acted[-1]

    eval_mode = dataclasses.replace(policy.eval_mode, forward=eval_forward)
    episodes = record(policy, GymEnv({'env_id': 'Pendulum-v1', 'env_kwargs': {'max_episode_steps': 5}}), 4,
                      eval_mode=eval_mode)
    assert [len(episode['reward']) for episode in episodes] == [5, 5, 5, 5]
    assert set(episodes[0]) == DEMO_COLUMNS  # the demonstration's columns, not TAAC's own
    for start in (0, 5):  # both envs start their episodes together
        assert torch.equal(acted[start]['prev_tau'], torch.zeros(2, 1, 1))  # a fresh trajectory
        assert acted[start + 4]['tau'].abs().sum() > 0  # which the episode then moved away from


@pytest.mark.parametrize('deterministic', [True, False])
def test_recorded_columns_are_the_envs_not_the_policys_normalised_ones(counter_env, deterministic):
    """PPO keeps its collect forward's normalised observations and its scaled rewards for training; a
    demonstration keeps what the env gave (the counter env's observation and reward are the step count)."""
    torch.manual_seed(0)
    cfg = PPOPolicy.default_config()
    cfg.model.update(obs_shape=1, action_shape=2)
    cfg.normalize.update(obs=True, reward=True)
    policy = PPOPolicy(cfg, enable_field=('collect', 'eval'))
    [episode, _] = record(policy, counter_env(terminate_at=3), 2, deterministic)
    assert set(episode) == DEMO_COLUMNS
    assert episode['obs'][:, 0].tolist() == [0, 1, 2] and episode['next_obs'][:, 0].tolist() == [1, 2, 3]
    assert episode['reward'].tolist() == [1, 2, 3]
    assert episode['terminated'].tolist() == [False, False, True] and not episode['truncated'].any()
