from collections import deque

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces

from tidal.envs import GymEnv, make_env_manager
from tidal.envs.snapshot import EnvSnapshotError, restore_env, snapshot_env

HANDLE_ID = 'tidal_test/Handle-v0'


class HandleEnv(gymnasium.Env):
    """Holds an attribute that is not plain data, as a physics engine's world object would be."""

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.handle = object()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


gymnasium.register(HANDLE_ID, entry_point=HandleEnv)

STEP_FIELDS = ['obs', 'next_obs', 'reward', 'terminated', 'truncated', 'episode_return', 'episode_length']


def run(manager, steps):
    """Step with `sample_actions()`; returns the actions and every array of every step."""
    trace = []
    for _ in range(steps):
        actions = manager.sample_actions()
        step = manager.step(actions)
        trace.append({'action': actions, **{name: getattr(step, name) for name in STEP_FIELDS}})
    return trace


def through_checkpoint(snapshot, tmp_path):
    path = tmp_path / 'envs.pt'
    torch.save(snapshot, path)
    return torch.load(path, weights_only=True)


def assert_same_trace(resumed, uninterrupted):
    for resumed_step, step in zip(resumed, uninterrupted, strict=True):
        for name, value in step.items():
            np.testing.assert_array_equal(resumed_step[name], value, err_msg=name)


# (env id, steps before the snapshot, steps after it): an episode ends in every resumed stretch;
# Pendulum, MountainCarContinuous and Acrobot by their time limits (200, 999, 500), CartPole by falling.
EXACT_ENVS = [('Pendulum-v1', 190, 20), ('CartPole-v1', 10, 60),
              ('MountainCarContinuous-v0', 990, 20), ('Acrobot-v1', 490, 20)]


def interrupt_and_restore(env_id, before, after, tmp_path, manager_type='base'):
    """(snapshot, trace of the restored envs, trace of the uninterrupted ones) around a snapshot taken
    after `before` steps; the restored manager was reset with another seed first."""
    make = GymEnv({'env_id': env_id}).make
    with make_env_manager(make, manager_type, 2) as manager:
        manager.reset(seed=0)
        run(manager, before)
        snapshot = through_checkpoint(manager.snapshot(), tmp_path)
        uninterrupted = run(manager, after)
    with make_env_manager(make, manager_type, 2) as resumed:
        resumed.reset(seed=123)
        assert resumed.restore(snapshot) is True
        return snapshot, run(resumed, after), uninterrupted


@pytest.mark.parametrize('env_id, before, after', EXACT_ENVS)
def test_restored_envs_continue_mid_episode_bit_identically(env_id, before, after, tmp_path):
    snapshot, trace, uninterrupted = interrupt_and_restore(env_id, before, after, tmp_path)
    assert_same_trace(trace, uninterrupted)
    assert snapshot['reason'] == ''
    assert any(step['terminated'].any() or step['truncated'].any() for step in uninterrupted)


def test_time_limit_truncation_and_autoreset_after_restore_match_the_uninterrupted_run(tmp_path):
    _, trace, uninterrupted = interrupt_and_restore('Pendulum-v1', 190, 20, tmp_path)
    truncated_at = [k for k, step in enumerate(trace) if step['truncated'].any()]
    assert truncated_at == [9]  # the 200th step of both episodes
    assert trace[9]['episode_length'].tolist() == [200, 200]
    assert not np.array_equal(trace[9]['obs'], trace[9]['next_obs'])  # the new episode started in place
    assert_same_trace(trace, uninterrupted)


def test_subprocess_envs_restore_exactly(tmp_path):
    _, trace, uninterrupted = interrupt_and_restore('Pendulum-v1', 195, 10, tmp_path, 'subprocess')
    assert_same_trace(trace, uninterrupted)


# MuJoCo's physics lives in MjData: Hopper falls within the 50 resumed steps, HalfCheetah reaches its 1000-step limit
MUJOCO_ENVS = [('Hopper-v5', 40, 50), ('HalfCheetah-v5', 980, 50)]


@pytest.mark.parametrize('env_id, before, after', MUJOCO_ENVS)
def test_restored_mujoco_envs_continue_mid_episode_bit_identically(env_id, before, after, tmp_path):
    snapshot, trace, uninterrupted = interrupt_and_restore(env_id, before, after, tmp_path)
    assert_same_trace(trace, uninterrupted)
    assert snapshot['reason'] == ''
    assert any(step['terminated'].any() or step['truncated'].any() for step in uninterrupted)


def test_mujoco_env_reading_body_positions_before_its_step_restores_exactly(tmp_path):
    # Ant's reward reads the torso position the previous step derived (xpos), not only qpos and qvel
    _, trace, uninterrupted = interrupt_and_restore('Ant-v5', 30, 20, tmp_path)
    assert_same_trace(trace, uninterrupted)


def test_subprocess_mujoco_envs_restore_exactly(tmp_path):
    _, trace, uninterrupted = interrupt_and_restore('Hopper-v5', 40, 50, tmp_path, 'subprocess')
    assert_same_trace(trace, uninterrupted)


def test_mujoco_snapshot_skips_the_engine_handles_and_keeps_the_env_rng(tmp_path):
    env = GymEnv({'env_id': 'Hopper-v5'}).make()
    env.reset(seed=0)
    hopper = snapshot_env(env)['layers'][-1]
    assert hopper['class'] == 'HopperEnv'
    assert not {'model', 'data', 'mujoco_renderer'} & hopper['state'].keys()
    assert '_np_random' in hopper['state'] and hopper['native']['integration']['dtype'] == 'float64'


def test_mujoco_snapshot_of_another_model_is_refused_before_any_env_changes():
    env = GymEnv({'env_id': 'Hopper-v5'}).make()
    env.reset(seed=0)
    snapshot = snapshot_env(env)
    snapshot['layers'][-1]['native']['model_signature'] += 1  # as if taken of a Hopper built from another XML
    qpos = env.unwrapped.data.qpos.copy()
    with pytest.raises(EnvSnapshotError, match='^the snapshot of HopperEnv does not fit the env: its MuJoCo state '
                                               'is of another model$'):
        restore_env(env, snapshot)
    np.testing.assert_array_equal(env.unwrapped.data.qpos, qpos)


def test_ale_emulator_with_its_rng_restores_exactly_through_a_checkpoint(tmp_path):
    pytest.importorskip('ale_py')  # sticky actions (ALE/*-v5) draw from the emulator's generator
    _, trace, uninterrupted = interrupt_and_restore('ALE/Pong-v5', 100, 300, tmp_path)
    assert_same_trace(trace, uninterrupted)
    assert any(step['reward'].any() for step in uninterrupted)


def preprocessed_pong():
    """The standard Atari chain of gymnasium's wrappers; frame stacking and episode statistics keep deques."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, RecordEpisodeStatistics
    env = gymnasium.make('ALE/Pong-v5', frameskip=1)
    return RecordEpisodeStatistics(FrameStackObservation(AtariPreprocessing(env), 4))


def test_atari_wrapper_chain_with_deques_restores_exactly(tmp_path):
    pytest.importorskip('ale_py')
    actions = np.random.default_rng(0).integers(0, 6, 200)
    env = preprocessed_pong()
    env.reset(seed=0)
    for action in actions[:100]:
        env.step(action)
    snapshot = through_checkpoint(snapshot_env(env), tmp_path)
    uninterrupted = [env.step(action)[:2] for action in actions[100:]]
    resumed = preprocessed_pong()
    resumed.reset(seed=1)
    restore_env(resumed, snapshot)
    assert resumed.env.obs_queue.maxlen == 4
    for (obs, reward), (expected_obs, expected_reward) in zip([resumed.step(a)[:2] for a in actions[100:]],
                                                              uninterrupted, strict=True):
        np.testing.assert_array_equal(obs, expected_obs)
        assert reward == expected_reward


def test_ale_snapshot_of_another_game_is_refused(tmp_path):
    pytest.importorskip('ale_py')
    with make_env_manager(GymEnv({'env_id': 'ALE/Pong-v5'}).make, 'base', 1) as pong:
        pong.reset(seed=0)
        snapshot = pong.snapshot()
    with make_env_manager(GymEnv({'env_id': 'ALE/Breakout-v5'}).make, 'base', 1) as breakout:
        breakout.reset(seed=0)
        with pytest.raises(EnvSnapshotError, match="^the snapshot of AtariEnv does not fit the env: its emulator "
                                                   "state is of the game 'pong', not 'breakout'$"):
            breakout.restore(snapshot)


@pytest.mark.parametrize('manager_type', ['base', 'subprocess'])
def test_env_with_a_non_plain_attribute_gives_no_env_snapshot_and_the_reason(manager_type, tmp_path):
    make = GymEnv({'env_id': HANDLE_ID}).make
    with make_env_manager(make, manager_type, 2) as manager:
        manager.reset(seed=0)
        snapshot = through_checkpoint(manager.snapshot(), tmp_path)
        manager.step(manager.sample_actions())  # the envs (and their workers) are still alive
    assert snapshot['envs'] is None
    assert snapshot['reason'] == "HandleEnv cannot be snapshot: attribute 'handle' holds an object"
    with make_env_manager(make, manager_type, 2) as resumed:
        resumed.reset(seed=1)
        assert resumed.restore(snapshot) is False


def test_snapshot_of_another_env_is_refused_before_any_env_changes():
    with make_env_manager(GymEnv({'env_id': 'Pendulum-v1'}).make, 'base', 2) as pendulum:
        pendulum.reset(seed=0)
        snapshot = pendulum.snapshot()
    with make_env_manager(GymEnv({'env_id': 'CartPole-v1'}).make, 'base', 2) as cartpole:
        cartpole.reset(seed=0)
        with pytest.raises(EnvSnapshotError, match='^a snapshot of ClipToBounds > RescaleAction > TimeLimit > '
                                                   'OrderEnforcing > PassiveEnvChecker > PendulumEnv does not fit the env '
                                                   'TimeLimit > OrderEnforcing > PassiveEnvChecker > CartPoleEnv$'):
            cartpole.restore(snapshot)


class ValuesEnv(HandleEnv):
    """Plain data of every kind a snapshot encodes."""

    def __init__(self) -> None:
        self.values = (np.float32(1.5), [np.arange(3, dtype=np.uint16), None, 'a'], {'k': np.int64(2)})
        self.dtype = np.dtype('float64')
        self.scalar_type = np.float32
        self.rng = np.random.default_rng(3)
        self.recent = deque([np.int64(4), 5.0], maxlen=3)


def test_restored_values_keep_their_numpy_types_tuples_and_generator_state(tmp_path):
    env = ValuesEnv()
    snapshot = through_checkpoint(snapshot_env(env), tmp_path)
    expected_draw = env.rng.random()
    env.values, env.dtype, env.scalar_type, env.recent = None, None, None, None
    restore_env(env, snapshot)
    scalar, (array, none, text), mapping = env.values
    assert type(scalar) is np.float32 and scalar == np.float32(1.5)
    assert array.dtype == np.uint16 and array.tolist() == [0, 1, 2]
    assert (none, text) == (None, 'a')
    assert type(mapping['k']) is np.int64 and mapping['k'] == 2
    assert env.dtype == np.dtype('float64') and env.scalar_type is np.float32
    assert env.rng.random() == expected_draw
    assert env.recent == deque([4, 5.0], maxlen=3) and type(env.recent[0]) is np.int64
