"""tidal/SimulatedCost-v0: the wrapped env's dynamics, with a set sleep per step."""
import time

import gymnasium
import numpy as np
import pytest

import tidal.envs  # noqa: F401  (registers the id)
from tidal.base.errors import ConfigError
from tidal.envs.simulated_cost import ENV_ID


def rollout(env, actions):
    obs, _ = env.reset(seed=3)
    seen = [obs]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        seen.append(np.append(obs, [reward, terminated, truncated]))
    return seen


def test_steps_as_the_wrapped_env_does_and_sleeps_each_step():
    actions = [0, 1, 1, 0, 1, 0, 0, 1]
    plain = rollout(gymnasium.make('CartPole-v1'), actions)
    slow_env = gymnasium.make(ENV_ID, env_id='CartPole-v1', step_seconds=0.01)
    start = time.perf_counter()
    slow = rollout(slow_env, actions)
    elapsed = time.perf_counter() - start
    assert all(np.array_equal(a, b) for a, b in zip(plain, slow))
    assert elapsed >= 0.01 * len(actions)  # time.sleep sleeps at least as long as asked
    assert slow_env.observation_space == gymnasium.make('CartPole-v1').observation_space


def test_the_wrapped_envs_own_arguments_pass_through():
    env = gymnasium.make(ENV_ID, env_id='Pendulum-v1', step_seconds=0.0, g=5.0)
    assert env.unwrapped.g == 5.0


@pytest.mark.parametrize('value', [-1, float('nan'), 'fast'])
def test_a_bad_cost_is_one_line_naming_the_key(value):
    with pytest.raises(ConfigError, match=r'env\.env_kwargs\.step_seconds'):
        gymnasium.make(ENV_ID, env_id='CartPole-v1', step_seconds=value)
