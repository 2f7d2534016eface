"""The 'pettingzoo' adapter: multi-agent obs dicts, per-agent rewards, agents that finish early."""
import numpy as np
import pytest
from easydict import EasyDict
from gymnasium import spaces

from tidal.envs import make_env_manager
from tidal.envs.pettingzoo_env import ParallelEnvAdapter, PettingZooEnv


def spread(team_reward: bool = False, reward_scale: float = 1.0, **kwargs) -> PettingZooEnv:
    pytest.importorskip('mpe2')
    return PettingZooEnv(EasyDict(env_id='mpe2.simple_spread_v3', env_kwargs=dict(N=3, max_cycles=25, **kwargs),
                                  team_reward=team_reward, reward_scale=reward_scale))


def test_simple_spread_shapes_for_the_multi_agent_model():
    assert spread().infer_shapes() == dict(agent_num=3, agent_obs_shape=18, global_obs_shape=54, action_shape=5,
                                           action_space='discrete')
    assert spread(continuous_actions=True).infer_shapes()['action_space'] == 'continuous'


def test_simple_spread_obs_dict_and_per_agent_reward_through_the_env_manager():
    with make_env_manager(spread().make, 'base', 2) as manager:
        obs = manager.reset(seed=0)
        assert obs['agent_state'].shape == (2, 3, 18) and obs['global_state'].shape == (2, 54)
        assert obs['action_mask'].shape == (2, 3, 5) and obs['action_mask'].all()
        for t in range(25):
            step = manager.step(manager.sample_actions())
            assert step.reward.shape == (2, 3)
        assert step.truncated.all() and not step.terminated.any()  # 25-step episodes
        assert np.isfinite(step.episode_return).all()
        assert step.next_obs['agent_state'].any()  # the final obs, not a zeroed one


def test_continuous_simple_spread_acts_in_the_unit_box():
    env = spread(continuous_actions=True).make()
    assert env.action_space.shape == (3, 5) and (env.action_space.low == -1).all()
    obs, _ = env.reset(seed=0)
    assert 'action_mask' not in obs
    env.step(env.action_space.sample())


def seeded_episode_rewards(env_def: PettingZooEnv) -> tuple[np.ndarray, np.ndarray]:
    """(reward vectors [25, agents], scalar rewards [25]) of one seeded episode of fixed random actions, in
    which agents collide on 6 steps (a collision costs only the agents in it)."""
    env = env_def.make()
    env.reset(seed=10)
    actions = np.random.default_rng(10).integers(0, 5, size=(25, 3))
    steps = [env.step(action) for action in actions]
    return np.stack([info['reward_vector'] for *_, info in steps]), np.array([step[1] for step in steps])


def test_team_reward_gives_every_agent_the_sum_of_the_agents_rewards_of_the_same_step():
    own, own_scalar = seeded_episode_rewards(spread())
    team, team_scalar = seeded_episode_rewards(spread(team_reward=True))
    assert (own.max(axis=1) != own.min(axis=1)).sum() == 6  # steps where the agents' own rewards differ
    assert np.allclose(team, own.sum(axis=1, keepdims=True).repeat(3, axis=1), rtol=0, atol=1e-5)
    assert np.array_equal(team_scalar, own_scalar)  # episode returns are the same sum either way


def test_reward_scale_multiplies_the_learned_rewards_only():
    team, _ = seeded_episode_rewards(spread(team_reward=True))
    scaled, scaled_scalar = seeded_episode_rewards(spread(team_reward=True, reward_scale=2.0))
    _, own_scalar = seeded_episode_rewards(spread())
    assert np.allclose(scaled, 2.0 * team, rtol=1e-6)
    assert np.array_equal(scaled_scalar, own_scalar)


def manager_episode_rewards(env_def: PettingZooEnv) -> np.ndarray:
    """`Step.reward` [25, envs, agents] of one seeded episode of 2 envs under fixed random actions."""
    with make_env_manager(env_def.make, 'base', 2) as manager:
        manager.reset(seed=6)
        actions = np.random.default_rng(6).integers(0, 5, size=(25, 2, 3))
        return np.stack([manager.step(action).reward for action in actions])


def test_team_reward_reaches_the_collector_as_the_sum_for_every_agent():
    own, team = manager_episode_rewards(spread()), manager_episode_rewards(spread(team_reward=True))
    assert team.shape == own.shape == (25, 2, 3)
    assert (own.max(axis=-1) != own.min(axis=-1)).sum() == 7  # (step, env) pairs where the agents' rewards differ
    assert np.allclose(team, own.sum(axis=-1, keepdims=True).repeat(3, axis=-1), rtol=0, atol=1e-5)


class FakeParallelEnv:
    """Two agents of different obs sizes; 'a' terminates after step 1, 'b' after step 3."""

    possible_agents = ['a', 'b']
    metadata = {'name': 'fake'}

    def __init__(self):
        self.agents, self.t = [], 0

    def observation_space(self, agent):
        return spaces.Box(-1, 1, (2 if agent == 'a' else 3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3 if agent == 'a' else 4)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {agent: self.observation_space(agent).sample() * 0 + 0.5 for agent in self.agents}, {}

    def step(self, actions):
        assert set(actions) == set(self.agents)
        self.t += 1
        ending = {'a': self.t >= 1, 'b': self.t >= 3}
        obs = {agent: np.full(self.observation_space(agent).shape, self.t, np.float32) for agent in self.agents}
        rewards = {agent: 1.0 for agent in self.agents}
        terminations = {agent: ending[agent] for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        self.agents = [agent for agent in self.agents if not ending[agent]]
        return obs, rewards, terminations, truncations, infos

    def close(self):
        pass


def test_an_agent_that_finishes_early_gets_no_reward_and_only_the_no_op():
    env = ParallelEnvAdapter(FakeParallelEnv())
    obs, info = env.reset(seed=0)
    assert obs['agent_state'].tolist() == [[0.5, 0.5, 0.0], [0.5, 0.5, 0.5]]  # padded to the larger obs
    assert obs['global_state'].shape == (6,)                                  # no state(): concatenated
    assert obs['action_mask'].tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    obs, reward, terminated, truncated, info = env.step(np.array([2, 3]))
    assert info['reward_vector'].tolist() == [1.0, 1.0] and reward == 2.0
    assert obs['action_mask'].tolist() == [[1, 0, 0, 0], [1, 1, 1, 1]]  # 'a' is done: no-op only
    assert obs['agent_state'][0].tolist() == [1.0, 1.0, 0.0]          # its final obs
    assert not terminated and not truncated
    obs, reward, terminated, truncated, info = env.step(np.array([0, 1]))
    assert info['reward_vector'].tolist() == [0.0, 1.0]
    assert obs['agent_state'][0].tolist() == [0.0, 0.0, 0.0]
    _, _, terminated, truncated, _ = env.step(np.array([0, 1]))
    assert terminated and not truncated  # every agent terminated


def test_with_team_reward_an_agent_that_finished_early_gets_the_team_reward():
    env = ParallelEnvAdapter(FakeParallelEnv(), team_reward=True)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([2, 3]))
    assert info['reward_vector'].tolist() == [2.0, 2.0] and reward == 2.0
    _, reward, _, _, info = env.step(np.array([0, 1]))  # 'a' is done: only 'b' earns, the team's sum is 1
    assert info['reward_vector'].tolist() == [1.0, 1.0] and reward == 1.0


def test_unknown_module_is_one_clear_error():
    from tidal.base.errors import EnvError
    with pytest.raises(EnvError, match="PettingZoo env 'mpe2.no_such_env' .* cannot be imported"):
        PettingZooEnv(EasyDict(env_id='mpe2.no_such_env')).infer_shapes()
