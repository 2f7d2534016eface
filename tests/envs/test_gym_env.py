import sys

import gymnasium
import numpy as np
import pytest

from tidal import ENV_REGISTRY
from tidal.envs import GymEnv
from tidal.base.errors import EnvError


def test_gym_is_the_registered_env_type():
    assert ENV_REGISTRY.get('gym') is GymEnv


def test_normalize_action_rescales_pendulum_to_unit_box_and_action_one_to_max_torque():
    env = GymEnv({'env_id': 'Pendulum-v1'}).make()
    np.testing.assert_array_equal(env.action_space.low, [-1.0])
    np.testing.assert_array_equal(env.action_space.high, [1.0])
    env.reset(seed=0)
    env.step(np.array([1.0], dtype=np.float32))
    assert env.unwrapped.last_u == pytest.approx(2.0)
    env.step(np.array([-0.5], dtype=np.float32))
    assert env.unwrapped.last_u == pytest.approx(-1.0)


def test_normalize_action_false_keeps_the_env_bounds():
    env = GymEnv({'env_id': 'Pendulum-v1', 'normalize_action': False}).make()
    np.testing.assert_array_equal(env.action_space.high, [2.0])


@pytest.mark.parametrize('normalize, action, torque', [(True, 3.0, 2.0), (True, -7.5, -2.0), (False, 5.0, 2.0),
                                                       (False, 1.5, 1.5)])
def test_actions_beyond_the_bounds_reach_the_env_clipped(normalize, action, torque):
    env = GymEnv({'env_id': 'Pendulum-v1', 'normalize_action': normalize}).make()
    env.reset(seed=0)
    env.step(np.array([action], dtype=np.float32))
    assert env.unwrapped.last_u == pytest.approx(torque)


def test_float64_box_observations_are_cast_to_float32(counter_env):
    env = counter_env(obs_dtype='float64').make()
    obs, _ = env.reset()
    assert env.observation_space.dtype == np.float32
    assert obs.dtype == np.float32


def test_env_kwargs_reach_gymnasium_make(counter_env):
    env = counter_env(max_episode_steps=2).make()
    env.reset()
    env.step(0)
    assert env.step(0)[3] is True


def test_empty_env_id_is_an_error():
    with pytest.raises(EnvError) as err:
        GymEnv({}).make()
    assert str(err.value) == 'env.env_id is not set'


def test_unknown_env_id_names_the_key_and_suggests_the_closest_id():
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': 'Pendulm-v1'}).make()
    assert str(err.value) == "unknown gymnasium env id 'Pendulm-v1' (env.env_id); did you mean 'Pendulum-v1'?"


def test_deprecated_env_version_is_reported_as_unknown_with_the_current_version():
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': 'Pendulum-v0'}).make()
    assert str(err.value) == "unknown gymnasium env id 'Pendulum-v0' (env.env_id); did you mean 'Pendulum-v1'?"


def test_bad_env_kwargs_name_the_key_and_the_env():
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': 'Pendulum-v1', 'env_kwargs': {'gravityy': 9.8}}).make()
    assert str(err.value) == ("env.env_kwargs do not fit gymnasium env 'Pendulum-v1': "
                              "PendulumEnv.__init__() got an unexpected keyword argument 'gravityy'")


def test_atari_id_without_ale_py_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'ale_py', None)  # makes `import ale_py` fail
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': 'ALE/Pong-v5'}).make()
    assert str(err.value) == "gymnasium env 'ALE/Pong-v5' (env.env_id) needs the ale-py package: pip install ale-py"


def test_infer_shapes_of_box_obs_and_box_action():
    assert GymEnv({'env_id': 'Pendulum-v1'}).infer_shapes() == {
        'obs_shape': 3, 'action_shape': 1, 'action_space': 'continuous'}


def test_infer_shapes_gives_a_list_for_multidimensional_obs(counter_env):
    shapes = counter_env(obs_shape=(4, 5)).infer_shapes()
    assert shapes['obs_shape'] == [4, 5]
    assert type(shapes['action_shape']) is int


def test_infer_shapes_reads_the_observation_of_a_dict_obs_with_action_mask(counter_env):
    assert counter_env(dict_obs=True).infer_shapes() == {
        'obs_shape': 1, 'action_shape': 2, 'action_space': 'discrete'}


def test_infer_shapes_rejects_a_discrete_observation_space():
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': 'FrozenLake-v1'}).infer_shapes()
    assert str(err.value) == ("cannot infer policy.model.obs_shape from the observation space Discrete(16) of "
                              "'FrozenLake-v1' (env.env_id): expected a Box, or a Dict with 'observation' "
                              "and 'action_mask'")


def test_spaces_are_built_once(counter_env):
    env = counter_env()
    assert env.spaces() is env.spaces()


class BoolGrid(gymnasium.Env):
    """MinAtar-like: a channel-last image of booleans, and a vector observation variant of int64."""

    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, image=True):
        self.observation_space = (gymnasium.spaces.Box(0, 1, (5, 5, 3), bool) if image
                                  else gymnasium.spaces.Box(0, 9, (4, ), np.int64))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


gymnasium.register('tidal-test/BoolGrid-v0', entry_point=BoolGrid)


@pytest.mark.parametrize('image, dtype', [(True, np.uint8), (False, np.float32)])
def test_images_of_bytes_or_booleans_stay_one_byte_per_value_and_vectors_become_float32(image, dtype):
    env = GymEnv({'env_id': 'tidal-test/BoolGrid-v0', 'env_kwargs': {'image': image}}).make()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.dtype == dtype and obs.dtype == dtype


def test_minatar_ids_register_themselves_or_name_the_missing_package():
    env = GymEnv({'env_id': 'MinAtar/Breakout-v1'})
    try:
        import minatar  # noqa: F401
    except ImportError:
        with pytest.raises(EnvError, match=r"MinAtar/Breakout-v1.*pip install minatar"):
            env.make()
        return
    obs, _ = env.make().reset(seed=0)
    assert obs.shape == (10, 10, 4) and obs.dtype == np.uint8


@pytest.mark.parametrize('env_id, kwargs, detail', [
    ('Pendulum-v1', {'max_episode_steps': -5},
     'ValueError: Expect the `max_episode_steps` to be positive, actually: -5'),
    ('FrozenLake-v1', {'map_name': '9x9'}, "KeyError: '9x9'"),  # raised by the env's own constructor
])
def test_values_gymnasium_refuses_are_one_line_naming_the_env_and_the_kwargs(env_id, kwargs, detail):
    with pytest.raises(EnvError) as err:
        GymEnv({'env_id': env_id, 'env_kwargs': kwargs}).make()
    assert str(err.value) == f"gymnasium env '{env_id}' cannot be made with env.env_kwargs {kwargs}: {detail}"
