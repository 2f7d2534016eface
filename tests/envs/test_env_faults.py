"""Faulty envs stop a run with one line naming the env, its index and the step."""
from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from tidal import serial_pipeline
from tidal.envs import GymEnv, make_env_manager
from tidal.base.errors import EnvError

FAULTY_ID = 'tidal_test/Faulty-v0'


class FaultyEnv(gymnasium.Env):
    """Counts its steps; at step `at` it returns a NaN observation or reward, or raises."""

    def __init__(self, fault: str = 'obs', at: int = 3) -> None:
        self.fault, self.at = fault, at
        self.observation_space = spaces.Box(-np.inf, np.inf, (2, ), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1, ), np.float32)
        self.count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.count += 1
        obs, reward = np.full(2, self.count, np.float32), 1.0
        if self.count == self.at:
            if self.fault == 'raise':
                raise RuntimeError('the simulator\nlost its state')
            if self.fault == 'obs':
                obs[1] = np.nan
            if self.fault == 'reward':
                reward = float('inf')
        return obs, reward, False, False, {}


gymnasium.register(FAULTY_ID, entry_point=FaultyEnv)


def manager(fault, num_envs=2, at=3, manager_type='base'):
    env = GymEnv({'env_id': FAULTY_ID, 'env_kwargs': {'fault': fault, 'at': at}})
    envs = make_env_manager(env.make, manager_type, num_envs, FAULTY_ID, 'collector')
    envs.reset(seed=0)
    return envs


@pytest.mark.parametrize('fault, what, value', [('obs', 'observation', 'nan'), ('reward', 'reward', 'inf')])
def test_non_finite_env_values_name_the_env_its_index_and_the_step(fault, what, value):
    envs = manager(fault)
    envs.step(np.zeros((2, 1), np.float32))
    envs.step(np.zeros((2, 1), np.float32))
    with pytest.raises(EnvError) as caught:
        envs.step(np.zeros((2, 1), np.float32))
    assert str(caught.value) == (f"env '{FAULTY_ID}' (collector env 0) returned a non-finite {what} ({value}) "
                                 f"in step 3 of its episode")


def test_an_env_raising_in_step_is_one_line_naming_env_and_step():
    envs = manager('raise', at=1)
    with pytest.raises(EnvError) as caught:
        envs.step(np.zeros((2, 1), np.float32))
    assert str(caught.value) == (f"env '{FAULTY_ID}' (collector envs) raised RuntimeError in step 1 of its episode: "
                                 f"the simulator lost its state")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_training_on_a_faulty_env_stops_and_logs_the_traceback(tmp_path, capsys):
    main_config = {'env': {'env_id': FAULTY_ID, 'env_kwargs': {'fault': 'obs', 'at': 30}, 'stop_value': None},
                   'policy': {'random_collect_size': 10, 'learn': {'batch_size': 8},
                              'model': {'actor_hidden_sizes': [8], 'critic_hidden_sizes': [8]}},
                   'exp_name': str(tmp_path / 'faulty')}
    create_config = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}
    with pytest.raises(EnvError, match=r"returned a non-finite observation \(nan\) in step 30 of its episode"):
        serial_pipeline((main_config, create_config), max_env_step=100, progress=False)
    log = (tmp_path / 'faulty' / 'log.txt').read_text()
    assert 'Traceback (most recent call last)' in log
    assert 'run ended (stopped by the error below) at env step' in capsys.readouterr().out


def test_an_env_raising_in_a_worker_process_is_one_line_without_the_workers_traceback(capfd):
    envs = manager('raise', at=1, manager_type='subprocess')
    try:
        with pytest.raises(EnvError) as caught:
            envs.step(np.zeros((2, 1), np.float32))
    finally:
        envs.close()
    assert str(caught.value) == (f"env '{FAULTY_ID}' (collector envs) raised RuntimeError in step 1 of its episode: "
                                 f"the simulator lost its state")
    printed = capfd.readouterr()
    assert 'Traceback' not in printed.err + printed.out and 'lost its state' not in printed.err
    # the workers' tracebacks stay on the cause, for the run's log file
    notes = caught.value.__cause__.__notes__
    assert [note.split(':', 1)[0] for note in notes] == ['worker process of env 0', 'worker process of env 1']
    assert all('in step' in note and note.endswith('RuntimeError: the simulator\nlost its state') for note in notes)


def test_a_run_keeps_the_worker_traceback_in_its_log_file(tmp_path, capfd):
    main_config = {'env': {'env_id': FAULTY_ID, 'env_kwargs': {'fault': 'raise', 'at': 30}, 'stop_value': None},
                   'env_manager': {'type': 'subprocess'},
                   'policy': {'random_collect_size': 10, 'learn': {'batch_size': 8},
                              'model': {'actor_hidden_sizes': [8], 'critic_hidden_sizes': [8]}},
                   'exp_name': str(tmp_path / 'faulty')}
    create_config = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}
    with pytest.raises(EnvError, match='raised RuntimeError in step 30 of its episode: the simulator lost its state'):
        serial_pipeline((main_config, create_config), max_env_step=100, progress=False)
    assert 'Traceback' not in capfd.readouterr().err
    log = (tmp_path / 'faulty' / 'log.txt').read_text()
    assert 'worker process of env 0: Traceback (most recent call last)' in log
    assert "raise RuntimeError('the simulator\\nlost its state')" in log
