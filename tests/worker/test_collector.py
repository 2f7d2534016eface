"""Collectors through the real env manager, with a stub policy whose actions are known."""
import dataclasses

import pytest
import torch
from easydict import EasyDict

from tidal.envs import make_env_manager
from tidal.policies.base import Policy
from tidal.base.errors import PolicyError
from tidal.base.modes import EnvLayout
from tidal.worker.collector import EpisodeCollector, SampleCollector


class ConstantPolicy(Policy):
    """Always action 0 (the counter env ignores actions); random actions are 1."""

    def __init__(self, unroll_len: int = 1) -> None:  # no model: only the collect mode is exercised
        self._cfg = EasyDict(collect=dict(unroll_len=unroll_len))
        self._enable_field = ('collect', )
        self.resets = []

    def _forward_collect(self, obs, **kwargs):
        return {'action': torch.zeros(obs.shape[0], dtype=torch.long)}

    def _random_action(self, obs):
        return {'action': torch.ones(obs.shape[0], dtype=torch.long)}

    def _reset_collect(self, env_ids=None):
        self.resets.append(env_ids)


def make_collector(counter_env, cls=SampleCollector, num_envs=1, unroll_len=1, **env_kwargs):
    env = make_env_manager(counter_env(**env_kwargs).make, 'base', num_envs)
    policy = ConstantPolicy(unroll_len)
    collector = cls(env, policy.collect_mode, torch.device('cpu'))
    collector.reset(seed=0)
    return collector, policy


def test_terminal_transition_keeps_final_obs_and_terminated_flag(counter_env):
    collector, policy = make_collector(counter_env, terminate_at=3)
    data = collector.collect(4)
    assert data['obs'].squeeze(-1).tolist() == [0, 1, 2, 0]
    assert data['next_obs'].squeeze(-1).tolist() == [1, 2, 3, 1]  # 3 is the final obs, not the reset obs 0
    assert data['terminated'].tolist() == [False, False, True, False]
    assert data['truncated'].tolist() == [False, False, False, False]
    assert data['reward'].tolist() == [1, 2, 3, 1]
    assert policy.resets[-1] == [0]


def test_truncated_step_bootstraps_from_final_obs(counter_env):
    collector, _ = make_collector(counter_env, max_episode_steps=2)
    data = collector.collect(3)
    assert data['next_obs'].squeeze(-1).tolist() == [1, 2, 1]
    assert data['truncated'].tolist() == [False, True, False]
    assert data['terminated'].tolist() == [False, False, False]


def test_n_sample_is_spread_over_envs_and_counts_env_steps(counter_env):
    collector, _ = make_collector(counter_env, num_envs=3)
    data = collector.collect(5)  # ceil(5 / 3) = 2 steps of 3 envs
    assert data['obs'].shape == (6, 1)
    assert collector.env_step == 6


def test_random_collect_uses_random_actions(counter_env):
    collector, _ = make_collector(counter_env)
    assert collector.collect(2, random=True)['action'].tolist() == [1, 1]
    assert collector.collect(1)['action'].tolist() == [0]


def test_finished_episode_returns_are_reported(counter_env):
    collector, _ = make_collector(counter_env, terminate_at=2)
    collector.collect(5)
    stats = collector.episodes.pop()
    assert stats.returns == [3.0, 3.0] and stats.lengths == [2, 2]
    assert collector.episodes.pop().returns == []


def test_transitions_are_step_major_so_each_env_strides_by_num_envs(counter_env):
    collector, _ = make_collector(counter_env, num_envs=2)
    data = collector.collect(8)  # 4 steps per env
    assert data['obs'].shape == (8, 1)
    assert data['obs'][0::2, 0].tolist() == [0, 1, 2, 3]
    assert data['obs'][1::2, 0].tolist() == [0, 1, 2, 3]


def test_timestep_marks_the_first_transition_of_each_episode(counter_env):
    seen = []

    def record(obs, output, timestep):
        seen.append(timestep.first.tolist())
        return {'obs': obs}

    collector, _ = make_collector(counter_env, num_envs=1, terminate_at=2)
    collector.policy = dataclasses.replace(collector.policy, process_transition=record)
    collector.collect(5)
    assert seen == [[True], [False], [True], [False], [True]]


def test_episode_collector_returns_whole_episodes_in_order(counter_env):
    collector, _ = make_collector(counter_env, cls=EpisodeCollector, num_envs=2, terminate_at=3)
    episodes = collector.collect(3)
    assert len(episodes) == 3
    for episode in episodes:
        assert episode['obs'].squeeze(-1).tolist() == [0, 1, 2]
        assert episode['terminated'].tolist() == [False, False, True]


def test_policy_get_train_sample_shapes_what_the_collector_returns(counter_env):
    collector, _ = make_collector(counter_env, num_envs=2)

    layouts = []

    def doubled_reward(transitions, layout):
        layouts.append(layout)
        return {**transitions, 'reward': transitions['reward'] * 2}

    collector.policy = dataclasses.replace(collector.policy, get_train_sample=doubled_reward)
    data = collector.collect(4)
    plain, _ = make_collector(counter_env, num_envs=2)
    assert torch.equal(data['reward'], plain.collect(4)['reward'] * 2)
    assert layouts == [EnvLayout(num_envs=2, steps=2)]  # rows step-major: 2 steps of 2 envs


class GridRewardPolicy(ConstantPolicy):
    """A user's policy that forgot to flatten its [steps, envs] reward grid back to step-major rows."""

    def _get_train_sample(self, transitions, layout):
        return {**transitions, 'reward': transitions['reward'].reshape(layout.steps, layout.num_envs)}


def test_a_sample_column_without_one_row_per_env_step_is_a_one_line_error(counter_env):
    env = make_env_manager(counter_env().make, 'base', 2)
    collector = SampleCollector(env, GridRewardPolicy().collect_mode, torch.device('cpu'))
    collector.reset(seed=0)
    with pytest.raises(PolicyError) as err:
        collector.collect(6)
    assert str(err.value) == ("the policy's _get_train_sample returned column 'reward' with shape [3, 2], expected 6 "
                              "rows (3 steps of 2 envs, step-major: env i's step k is row k * 2 + i)")


def test_a_sample_that_is_not_a_dict_of_columns_is_a_one_line_error(counter_env):
    collector, _ = make_collector(counter_env, num_envs=2)
    collector.policy = dataclasses.replace(collector.policy, get_train_sample=lambda transitions, layout: [transitions])
    with pytest.raises(PolicyError) as err:
        collector.collect(4)
    assert str(err.value) == "the policy's _get_train_sample must return a dict of columns with 4 rows each, got list"


class CountingPolicy(ConstantPolicy):
    """Keeps a run-level counter in its collect state, as an eps or temperature schedule does."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = 0

    def _state_dict_collect(self):
        return {'counter': self.counter}

    def _load_state_dict_collect(self, state):
        self.counter = state['counter']


def test_resume_onto_envs_that_could_not_be_saved_keeps_the_policys_run_level_state(counter_env):
    env = make_env_manager(counter_env().make, 'base', 2)
    policy = CountingPolicy()
    collector = SampleCollector(env, policy.collect_mode, torch.device('cpu'))
    collector.reset(seed=0)
    collector.collect(4)
    policy.counter = 7
    state = collector.state_dict()
    state['env'] = {**state['env'], 'envs': None, 'reason': 'these envs cannot be saved'}

    fresh = CountingPolicy()
    resumed = SampleCollector(make_env_manager(counter_env().make, 'base', 2), fresh.collect_mode,
                              torch.device('cpu'))
    assert resumed.load_state_dict(state, fallback_seed=1) == 'these envs cannot be saved'
    assert fresh.counter == 7
    assert fresh.resets[-1] is None  # and the old episodes' acting state is dropped: new episodes begin
    assert resumed.env_step == 4
