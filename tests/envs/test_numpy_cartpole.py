"""The 'numpy' env manager: CartPole-v1 as arrays, step for step the 'base' manager's envs."""
from __future__ import annotations

import numpy as np
import pytest

from tidal.base.errors import ConfigError
from tidal.entry.setup import load_config
from tidal.worker.builders import build_env_manager

STEP_FIELDS = ('obs', 'next_obs', 'reward', 'terminated', 'truncated', 'episode_return', 'episode_length')


def managers(role: str, overrides: tuple[str, ...] = ()):
    base = build_env_manager(load_config('cartpole_ppo', overrides=list(overrides)), role)
    numpy = build_env_manager(load_config('cartpole_ppo', overrides=[*overrides, 'env_manager.type=numpy']), role)
    return base, numpy


def actions(obs: np.ndarray, step: int, rng: np.random.Generator) -> np.ndarray:
    """Random actions (short episodes), then a balancing policy (episodes that reach the time limit)."""
    if (step // 300) % 2:
        return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)
    return rng.integers(0, 2, size=len(obs))


def assert_same_steps(base, numpy, steps: int, seed: int = 3) -> tuple[int, int]:
    """Step both managers with the same actions; (terminations, truncations) seen."""
    obs = base.reset(seed=seed)
    assert np.array_equal(obs, numpy.reset(seed=seed))
    rng, terminated, truncated = np.random.default_rng(0), 0, 0
    for step in range(steps):
        act = actions(obs, step, rng)
        a, b = base.step(act), numpy.step(act)
        for name in STEP_FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), (step, name)
        obs = a.obs
        terminated += int(a.terminated.sum())
        truncated += int(a.truncated.sum())
    return terminated, truncated


def test_numpy_cartpole_steps_as_gymnasiums_envs_do():
    base, numpy = managers('collector', ('env.env_kwargs.max_episode_steps=200',))
    terminated, truncated = assert_same_steps(base, numpy, 1500)
    assert terminated > 50 and truncated > 5  # both ways an episode ends, and the resets after them


def test_numpy_cartpole_snapshot_continues_exactly():
    base, numpy = managers('evaluator')
    assert_same_steps(base, numpy, 250)
    snapshot = numpy.snapshot()
    assert snapshot['reason'] == ''
    _, restored = managers('evaluator')
    restored.reset(seed=99)  # the managers restore onto envs that have been reset
    assert restored.restore(snapshot)
    rng = np.random.default_rng(5)
    for _ in range(300):
        act = rng.integers(0, 2, size=numpy.num_envs)
        a, b = numpy.step(act), restored.step(act)
        for name in STEP_FIELDS:
            assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


def test_numpy_manager_refuses_another_env():
    cfg = load_config('pendulum_sac', overrides=['env_manager.type=numpy'])
    with pytest.raises(ConfigError, match="env_manager.type 'numpy' steps CartPole-v1 only.*'Pendulum-v1'.*use 'base'"):
        build_env_manager(cfg, 'collector')
    cfg = load_config('cartpole_ppo', overrides=['env_manager.type=numpy', 'env.env_kwargs.sutton_barto_reward=true'])
    with pytest.raises(ConfigError, match=r"env.env_kwargs \['sutton_barto_reward'\] change the env"):
        build_env_manager(cfg, 'collector')
