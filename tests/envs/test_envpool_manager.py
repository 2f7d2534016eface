"""Env manager 'envpool': the same Step records as gymnasium's managers, on EnvPool's C++ envs."""
import json
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from tidal import serial_pipeline
from tidal.base.errors import EnvError
from tidal.entry.pipelines import resume
from tidal.envs import GymEnv, make_env_manager
from tidal.envs.envpool_tasks import envpool_task
from tidal.worker.feeds.replay import ReplayFeed

pytest.importorskip('envpool', reason="env_manager.type 'envpool' needs the envpool package (extra envpool)")
warnings.filterwarnings('ignore', message='.*gym.*')  # EnvPool imports gym's old API where it finds it


def envpool_manager(env_id, num_envs=2, role='collector', **env_cfg):
    cfg = dict(type='gym', env_id=env_id, **env_cfg)
    return make_env_manager(GymEnv(cfg).make, 'envpool', num_envs, env_id, role, env_cfg=cfg)


def balance(obs):
    """A hand-tuned linear controller that keeps CartPole up for 500 steps."""
    x, x_dot, theta, theta_dot = obs.T
    return (x + x_dot + 10 * theta + 3 * theta_dot > 0).astype(np.int64)


def test_cartpole_terminates_when_the_pole_falls_and_restarts_in_the_same_step():
    with envpool_manager('CartPole-v1') as manager:
        manager.reset(seed=0)
        for length in range(1, 500):
            step = manager.step(np.ones(2, dtype=np.int64))
            if step.done.any():
                break
    ended = np.flatnonzero(step.done)
    assert step.terminated[ended].all() and not step.truncated.any()
    final = step.next_obs[ended]
    assert (np.abs(final[:, 2]) > 0.2095).all() or (np.abs(final[:, 0]) > 2.4).all()  # the pole fell
    assert (np.abs(step.obs[ended]) <= 0.05).all()  # the new episode's start
    assert step.episode_length[ended].tolist() == [length] * len(ended)
    assert step.episode_return[ended].tolist() == [float(length)] * len(ended)


def test_cartpole_is_truncated_at_500_steps_with_the_final_obs_as_next_obs():
    with envpool_manager('CartPole-v1') as manager:
        obs = manager.reset(seed=0)
        for _ in range(500):
            step = manager.step(balance(obs))
            obs = step.obs
    assert step.truncated.all() and not step.terminated.any()
    assert step.episode_length.tolist() == [500, 500]
    assert not np.allclose(step.next_obs, step.obs)
    assert (np.abs(step.obs) <= 0.05).all()


def test_pendulum_truncates_at_200_and_rescales_actions_from_unit_to_its_torque_bounds():
    with envpool_manager('Pendulum-v1') as manager:
        obs = manager.reset(seed=0)
        assert manager.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        step = manager.step(np.array([[1.0], [5.0]], dtype=np.float32))  # +1 is the full torque 2; 5 clips to it
        # gymnasium's Pendulum: thdot' = thdot + (3 g / (2 l) sin(th) + 3 / (m l^2) u) dt, g=10, m=l=1, dt=0.05
        theta, theta_dot = np.arctan2(obs[:, 1], obs[:, 0]), obs[:, 2]
        expected = theta_dot + (15.0 * np.sin(theta) + 3.0 * 2.0) * 0.05
        np.testing.assert_allclose(step.next_obs[:, 2], expected, rtol=1e-5)
        for _ in range(199):
            step = manager.step(np.zeros((2, 1), dtype=np.float32))
    assert step.truncated.all() and not step.terminated.any()
    assert step.episode_length.tolist() == [200, 200]


@pytest.mark.parametrize('env_id, obs_shape, action_space', [
    ('CartPole-v1', (4,), gymnasium.spaces.Discrete(2)),
    ('Hopper-v5', (11,), gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)),
])
def test_observations_are_float32_vectors_and_spaces_match_the_gym_env_type(env_id, obs_shape, action_space):
    with envpool_manager(env_id, num_envs=3) as manager:
        obs = manager.reset(seed=0)
        step = manager.step(manager.sample_actions())
        expected_space = GymEnv(dict(env_id=env_id)).spaces()[1]
    assert obs.shape == (3, *obs_shape) and obs.dtype == np.float32
    assert step.next_obs.dtype == np.float32 and step.reward.dtype == np.float32
    assert manager.action_space == action_space == expected_space


def test_atari_stacks_are_uint8_channel_last_as_the_atari_env_type_gives_them():
    atari_env = pytest.importorskip('tidal.envs.atari_env', reason="the 'atari' env type is not in this tree")
    cfg = dict(type='atari', env_id='PongNoFrameskip-v4')
    env = atari_env.AtariEnv(cfg)
    with make_env_manager(lambda: env.make('evaluator'), 'envpool', 2, cfg['env_id'], 'evaluator',
                          env_cfg=cfg) as manager:
        obs = manager.reset(seed=0)
        step = manager.step(np.zeros(2, dtype=np.int64))
    assert obs.shape == (2, 84, 84, 4) and obs.dtype == np.uint8 and step.next_obs.dtype == np.uint8
    assert manager.observation_space == env.spaces()[0]


def test_a_lost_life_ends_a_collector_episode_and_the_next_one_goes_on_with_the_game():
    atari_env = pytest.importorskip('tidal.envs.atari_env', reason="the 'atari' env type is not in this tree")
    cfg = dict(type='atari', env_id='BreakoutNoFrameskip-v4')
    env = atari_env.AtariEnv(cfg)
    lives_at_ends = []
    with make_env_manager(lambda: env.make('collector'), 'envpool', 1, cfg['env_id'], 'collector',
                          env_cfg=cfg) as manager:
        manager.reset(seed=0)
        actions = np.random.default_rng(0).integers(4, size=(2000, 1))
        for action in actions:
            step = manager.step(action)
            if step.done[0]:
                assert step.terminated[0]
                lives_at_ends.append(int(step.info['lives'][0]))
                if len(lives_at_ends) == 3:
                    break
    assert lives_at_ends == [4, 3, 2]  # one life per episode, the game going on (Breakout starts with 5)


@pytest.mark.parametrize('env_id, sticky', [('ALE/Pong-v5', 0.25), ('PongNoFrameskip-v4', 0.0)])
def test_atari_ids_map_to_envpool_tasks_with_lives_and_clipping_for_the_collector_only(env_id, sticky):
    cfg = dict(type='atari', env_id=env_id, frame_stack=4, noop_max=30, frame_skip=4, screen_size=84)
    task, collector = envpool_task(cfg, True, ['Pong-v5'])
    _, evaluator = envpool_task(cfg, False, ['Pong-v5'])
    assert task == 'Pong-v5' and collector['repeat_action_probability'] == sticky
    assert collector['episodic_life'] and collector['reward_clip']
    assert not evaluator['episodic_life'] and not evaluator['reward_clip']
    assert (collector['stack_num'], collector['frame_skip'], collector['noop_max'], collector['img_height'],
            collector['max_episode_steps']) == (4, 4, 30, 84, 27_000)


def test_atari_without_noops_is_refused_since_envpool_crashes_on_it():
    with pytest.raises(EnvError, match=r"env.noop_max=0 cannot run under env_manager.type 'envpool'"):
        envpool_task(dict(type='atari', env_id='ALE/Pong-v5', noop_max=0), True, ['Pong-v5'])


def test_env_i_is_seeded_with_seed_plus_i_and_a_seeded_reset_repeats_its_episodes():
    with envpool_manager('CartPole-v1', num_envs=2) as pair, envpool_manager('CartPole-v1', num_envs=1) as single:
        first = pair.reset(seed=4)
        pair.step(np.ones(2, dtype=np.int64))
        np.testing.assert_array_equal(pair.reset(seed=4), first)
        np.testing.assert_array_equal(single.reset(seed=5)[0], first[1])


def test_an_id_envpool_lacks_is_refused_in_one_line_naming_the_close_ids():
    with pytest.raises(EnvError) as err:
        envpool_manager('Taxi-v4')
    message = str(err.value)
    assert message.startswith("EnvPool has no task for env.env_id 'Taxi-v4'; close EnvPool ids: ")
    assert 'Taxi-v3' in message and '\n' not in message


def test_env_kwargs_envpool_cannot_set_are_refused_naming_them():
    with pytest.raises(EnvError, match=r"env.env_kwargs \['render_mode'\] have no EnvPool setting"):
        envpool_manager('Pendulum-v1', env_kwargs=dict(render_mode='rgb_array'))


def test_a_snapshot_holds_no_envs_and_says_why_so_a_resume_starts_new_episodes():
    with envpool_manager('CartPole-v1') as manager:
        manager.reset(seed=0)
        manager.step(np.ones(2, dtype=np.int64))
        snapshot = manager.snapshot()
        assert snapshot['envs'] is None
        assert snapshot['reason'] == "EnvPool's envs cannot be snapshot (env_manager.type 'envpool')"
        assert manager.restore(snapshot) is False


class Crash(Exception):
    """Stands for a kill between two checkpoints."""


def test_a_resumed_envpool_run_restarts_its_episodes_and_says_why(tmp_path, monkeypatch, capsys):
    original, calls = ReplayFeed.step, []

    def crashing_step(self, env_budget):
        calls.append(1)
        if len(calls) >= 45:  # after the checkpoint at train iteration 30
            raise Crash
        return original(self, env_budget)

    overrides = ['env_manager.type=envpool', 'policy.random_collect_size=64', 'policy.learn.batch_size=8',
                 'policy.learn.learner.save_ckpt_freq=30', 'env.n_evaluator_episode=1', 'env.stop_value=null',
                 'policy.eval.evaluator.eval_freq=1000', f"exp_name={tmp_path / 'run'}"]
    monkeypatch.setattr(ReplayFeed, 'step', crashing_step)
    with pytest.raises(Crash):
        serial_pipeline('pendulum_sac', seed=1, max_env_step=130, progress=False, overrides=overrides)
    monkeypatch.undo()
    capsys.readouterr()
    resume(tmp_path / 'run', progress=False)
    assert ("tidal: resume: the collector envs restart their episodes (EnvPool's envs cannot be snapshot "
            "(env_manager.type 'envpool'))") in capsys.readouterr().out


def test_same_state_and_action_give_the_same_next_state_as_gymnasium_cartpole():
    """EnvPool's CartPole-v1 is gymnasium's dynamics (to float32 rounding); only the seeded starts differ."""
    reference = CartPoleEnv()
    reference.reset(seed=0)
    with envpool_manager('CartPole-v1', num_envs=1) as manager:
        obs = manager.reset(seed=0)
        for action in [0, 1, 1, 0, 1]:
            reference.state = obs[0].astype(np.float64)
            expected = reference.step(action)[0]
            obs = manager.step(np.array([action])).next_obs
            np.testing.assert_allclose(obs[0], expected, atol=1e-6)


def test_cartpole_ppo_trains_from_the_cli_on_envpool(tmp_path):
    sets = ['env_manager.type=envpool', 'env.collector_env_num=4', 'policy.collect.n_sample=128',
            'policy.learn.epoch_per_collect=1', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
            'policy.eval.evaluator.eval_freq=4', 'env.stop_value=null']
    result = subprocess.run([sys.executable, '-m', 'tidal', 'train', 'cartpole_ppo', '--max-env-step', '384',
                             '--exp-name', 'run', '--no-progress', *[arg for key in sets for arg in ('--set', key)]],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['env_step'] == 384
