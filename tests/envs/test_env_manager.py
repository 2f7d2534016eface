import numpy as np
import pytest

from tidal import ENV_MANAGER_REGISTRY
from tidal.envs import GymEnv, make_env_manager
from tidal.base.errors import UnknownNameError

MANAGERS = ['base', 'subprocess']


def two_counters(counter_env, manager_type, **env_kwargs):
    """Env 0 terminates at count 3; env 1 never terminates and is truncated at count 2."""
    env_fns = [counter_env(terminate_at=3, **env_kwargs).make,
               counter_env(max_episode_steps=2, **env_kwargs).make]
    return ENV_MANAGER_REGISTRY.get(manager_type)(env_fns)


def steps(manager, n):
    manager.reset(seed=0)
    return [manager.step(np.zeros(manager.num_envs, dtype=np.int64)) for _ in range(n)]


@pytest.mark.parametrize('manager_type', MANAGERS)
def test_terminated_and_truncated_are_kept_apart_per_env(counter_env, manager_type):
    with two_counters(counter_env, manager_type) as manager:
        trace = steps(manager, 4)
    assert [s.terminated.tolist() for s in trace] == [[False, False], [False, False], [True, False], [False, False]]
    assert [s.truncated.tolist() for s in trace] == [[False, False], [False, True], [False, False], [False, True]]


@pytest.mark.parametrize('manager_type', MANAGERS)
def test_next_obs_is_the_final_obs_and_obs_the_new_episode_start_where_an_episode_ends(counter_env, manager_type):
    with two_counters(counter_env, manager_type) as manager:
        trace = steps(manager, 3)
    # counts: env 0 runs 1, 2, 3 (terminates); env 1 runs 1, 2 (truncated), then 1 after its reset
    assert [s.next_obs[:, 0].tolist() for s in trace] == [[1, 1], [2, 2], [3, 1]]
    assert [s.obs[:, 0].tolist() for s in trace] == [[1, 1], [2, 0], [0, 1]]


@pytest.mark.parametrize('manager_type', MANAGERS)
def test_dict_observations_with_action_mask_get_their_final_obs_per_key(counter_env, manager_type):
    with two_counters(counter_env, manager_type, dict_obs=True) as manager:
        ended = steps(manager, 3)[-1]
    assert ended.next_obs['observation'][:, 0].tolist() == [3, 1]
    assert ended.obs['observation'][:, 0].tolist() == [0, 1]
    assert ended.next_obs['action_mask'].tolist() == [[1, 1], [1, 1]]
    assert ended.obs['action_mask'].tolist() == [[1, 0], [1, 1]]


def test_obs_and_next_obs_agree_where_no_episode_ended(counter_env):
    with two_counters(counter_env, 'base') as manager:
        first = steps(manager, 1)[0]
    np.testing.assert_array_equal(first.next_obs, first.obs)


def test_episode_return_and_length_are_reported_only_where_an_episode_ended(counter_env):
    with two_counters(counter_env, 'base') as manager:
        trace = steps(manager, 4)
    # rewards are the counts: env 0 ends at step 3 with 1 + 2 + 3; env 1 ends at steps 2 and 4 with 1 + 2
    returns = np.array([s.episode_return for s in trace])
    np.testing.assert_array_equal(returns, [[np.nan, np.nan], [np.nan, 3.0], [6.0, np.nan], [np.nan, 3.0]])
    assert [s.episode_length.tolist() for s in trace] == [[0, 0], [0, 2], [3, 0], [0, 2]]
    assert trace[2].episode_return[trace[2].done].tolist() == [6.0]


def test_reset_starts_the_episode_bookkeeping_again(counter_env):
    with two_counters(counter_env, 'base') as manager:
        steps(manager, 1)
        truncated_after_reset = steps(manager, 2)[-1]
    assert truncated_after_reset.episode_return[1] == 3.0


def test_rewards_are_float32(counter_env):
    with two_counters(counter_env, 'base') as manager:
        assert steps(manager, 1)[0].reward.dtype == np.float32


def test_manager_exposes_single_env_spaces(counter_env):
    with two_counters(counter_env, 'base') as manager:
        assert manager.num_envs == 2
        assert manager.observation_space.shape == (1,)
        assert manager.action_space.n == 2


def pendulum_trace(seed, num_envs=2, n_steps=5, action_shape=None):
    env = GymEnv({'env_id': 'Pendulum-v1'})
    with make_env_manager(env.make, 'base', num_envs) as manager:
        observations = [manager.reset(seed=seed)]
        actions = np.full(action_shape or (num_envs,), 0.5, dtype=np.float32)
        observations += [manager.step(actions).obs for _ in range(n_steps)]
    return np.stack(observations)


def test_same_seed_gives_the_same_observation_sequence():
    np.testing.assert_array_equal(pendulum_trace(seed=7), pendulum_trace(seed=7))
    assert not np.array_equal(pendulum_trace(seed=7), pendulum_trace(seed=8))


def test_env_i_is_seeded_with_seed_plus_i():
    np.testing.assert_array_equal(pendulum_trace(seed=7)[:, 1], pendulum_trace(seed=8, num_envs=1)[:, 0])


def test_one_dimensional_continuous_actions_may_come_without_the_action_axis():
    np.testing.assert_array_equal(pendulum_trace(seed=3, action_shape=(2,)),
                                  pendulum_trace(seed=3, action_shape=(2, 1)))


def test_discrete_actions_may_come_with_a_trailing_axis(counter_env):
    with two_counters(counter_env, 'base') as manager:
        manager.reset()
        step = manager.step(np.zeros((2, 1), dtype=np.int64))
    assert step.obs[:, 0].tolist() == [1, 1]


def test_sample_actions_gives_one_action_per_env_in_the_normalized_box():
    env = GymEnv({'env_id': 'Pendulum-v1'})
    with make_env_manager(env.make, 'base', 3) as manager:
        manager.reset(seed=0)
        actions = manager.sample_actions()
    assert actions.shape == (3, 1)
    assert np.all(np.abs(actions) <= 1.0)


def test_unknown_manager_type_suggests_the_closest_name(counter_env):
    with pytest.raises(UnknownNameError) as err:
        make_env_manager(counter_env().make, 'subproces', 1)
    assert "did you mean 'subprocess'?" in str(err.value)
