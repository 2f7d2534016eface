"""Env type 'atari' on real ALE games: the preprocessing, and what differs between collector and evaluator envs.

Breakout with NOOP actions loses a life deterministically: FIRE (pressed after the reset) launches the ball,
and the paddle that never moves misses it within a few dozen steps.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip('ale_py')
pytest.importorskip('cv2')  # gymnasium's AtariPreprocessing resizes with OpenCV

from tidal import ENV_REGISTRY  # noqa: E402
from tidal.base.errors import EnvError  # noqa: E402
from tidal.envs.atari_env import AtariEnv, ale_id_and_kwargs  # noqa: E402
from tidal.entry.cli import main as tidal_main  # noqa: E402
from tidal.envs.snapshot import restore_env, snapshot_env  # noqa: E402

NOOP, FIRE = 0, 1


def breakout(role: str, **cfg):
    env = AtariEnv({'env_id': 'BreakoutNoFrameskip-v4', **cfg}).make(role)
    env.reset(seed=0)
    return env


def noop_until_a_life_is_lost(env, limit: int = 500) -> tuple[list[float], bool, dict]:
    """(rewards, terminated at the lost life, info) of NOOP steps until the lives drop."""
    lives = env.unwrapped.ale.lives()
    rewards = []
    for _ in range(limit):
        _, reward, terminated, truncated, info = env.step(NOOP)
        rewards.append(reward)
        assert not truncated
        if env.unwrapped.ale.lives() < lives:
            return rewards, terminated, info
        assert not terminated
    raise AssertionError(f'no life lost in {limit} NOOP steps')


def test_atari_is_the_registered_env_type():
    assert ENV_REGISTRY.get('atari') is AtariEnv


@pytest.mark.parametrize('role', ['collector', 'evaluator'])
def test_observations_are_84x84x4_uint8_channel_last(role):
    env = breakout(role)
    obs, *_ = env.step(NOOP)
    assert env.observation_space.shape == (84, 84, 4) and env.observation_space.dtype == np.uint8
    assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8 and obs.flags['C_CONTIGUOUS']


def test_the_newest_frame_is_last_in_the_stack():
    env = breakout('evaluator')
    frames = [env.step(NOOP)[0] for _ in range(6)]
    for older, newer in zip(frames, frames[1:]):
        # what was the newest frame is one place further back a step later
        np.testing.assert_array_equal(newer[..., :3], older[..., 1:])
    assert any(not np.array_equal(a[..., -1], b[..., -1]) for a, b in zip(frames, frames[1:]))  # the ball moves


def test_collector_env_ends_the_episode_at_a_lost_life_and_the_game_goes_on():
    env = breakout('collector')
    _, terminated, info = noop_until_a_life_is_lost(env)
    assert terminated and info['lives'] == 4
    env.reset()
    assert env.unwrapped.ale.lives() == 4  # the same game, not a new one


def test_evaluator_env_plays_on_after_a_lost_life():
    env = breakout('evaluator')
    _, terminated, info = noop_until_a_life_is_lost(env)
    assert not terminated and info['lives'] == 4


def test_episode_life_false_keeps_collector_episodes_whole():
    _, terminated, _ = noop_until_a_life_is_lost(breakout('collector', episode_life=False))
    assert not terminated


def fire_rewards(role: str, steps: int = 150, **cfg) -> np.ndarray:
    """Rewards of Space Invaders under FIRE from the same seed: aliens are worth 5 to 30 points."""
    env = AtariEnv({'env_id': 'SpaceInvadersNoFrameskip-v4', 'episode_life': False, **cfg}).make(role)
    env.reset(seed=0)
    return np.array([env.step(FIRE)[1] for _ in range(steps)])


def test_collector_env_clips_rewards_to_their_sign_and_evaluator_env_keeps_the_score():
    score = fire_rewards('evaluator')
    assert score.max() >= 5
    np.testing.assert_array_equal(fire_rewards('collector'), np.sign(score))
    np.testing.assert_array_equal(fire_rewards('collector', clip_rewards=False), score)


def test_v4_ids_map_to_ale_ids_without_sticky_actions():
    assert ale_id_and_kwargs('PongNoFrameskip-v4') == ('ALE/Pong-v5', {'repeat_action_probability': 0.0,
                                                                        'full_action_space': False})
    assert ale_id_and_kwargs('ALE/Breakout-v5') == ('ALE/Breakout-v5', {})
    env = AtariEnv({'env_id': 'PongNoFrameskip-v4'}).make()
    assert env.unwrapped.spec.id == 'ALE/Pong-v5' and env.unwrapped._frameskip == 1
    assert env.action_space.n == 6  # the minimal action set


def test_unknown_atari_id_names_env_id():
    with pytest.raises(EnvError) as err:
        AtariEnv({'env_id': 'Pong-v4'}).make()
    assert str(err.value) == ("Atari env id 'Pong-v4' (env.env_id) is neither an ALE id ('ALE/Pong-v5') nor a "
                              "NoFrameskip-v4 id ('PongNoFrameskip-v4')")


def test_frameskip_in_env_kwargs_points_to_frame_skip():
    with pytest.raises(EnvError) as err:
        AtariEnv({'env_id': 'ALE/Pong-v5', 'env_kwargs': {'frameskip': 4}}).make()
    assert str(err.value) == "env.env_kwargs.frameskip is set for Atari env 'ALE/Pong-v5': set env.frame_skip instead"


def test_infer_shapes_gives_the_channel_last_stack():
    assert AtariEnv({'env_id': 'ALE/Pong-v5', 'frame_stack': 2}).infer_shapes() == {
        'obs_shape': [84, 84, 2], 'action_shape': 6, 'action_space': 'discrete'}


def test_collector_env_resumes_exactly_from_a_snapshot():
    """The emulator, the frame stack and the lives the episodic-life wrapper counts all come back."""
    env = breakout('collector')
    actions = np.random.default_rng(0).integers(4, size=230)
    for action in actions[:30]:
        env.step(int(action))
    snapshot = snapshot_env(env)

    def play(env) -> list:
        steps = []
        for action in actions[30:]:
            obs, reward, terminated, truncated, _ = env.step(int(action))
            steps.append((obs.copy(), reward, terminated))
            if terminated or truncated:
                env.reset()
        return steps

    played = play(env)
    resumed = breakout('collector')
    restore_env(resumed, snapshot)
    replayed = play(resumed)
    assert any(terminated for _, _, terminated in played)  # lost lives inside the replayed stretch
    assert all(np.array_equal(a[0], b[0]) and a[1:] == b[1:] for a, b in zip(played, replayed))


def test_runs_build_collector_and_evaluator_envs_for_their_roles(monkeypatch):
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_env_manager
    roles: list[str] = []
    original = AtariEnv._preprocess

    def recording(self, env, role):
        roles.append(role)
        return original(self, env, role)
    monkeypatch.setattr(AtariEnv, '_preprocess', recording)
    cfg = load_config('pong_ppo', 0, ['env.collector_env_num=2', 'env.evaluator_env_num=1'])
    roles.clear()  # compile_config's probe builds one env too
    for role in ('collector', 'evaluator'):
        build_env_manager(cfg, role).close()
    assert roles == ['collector', 'collector', 'evaluator']


def test_pong_ppo_trains_from_the_cli(tmp_path, monkeypatch):
    """A short run of the zoo config; evaluation games are cut at 1000 frames to stay fast."""
    monkeypatch.chdir(tmp_path)
    code = tidal_main(['train', 'pong_ppo', '--max-env-step', '256', '--no-progress',
                       '--set', 'env.collector_env_num=2', '--set', 'policy.collect.n_sample=128',
                       '--set', 'env.evaluator_env_num=1', '--set', 'env.n_evaluator_episode=1',
                       '--set', 'env.env_kwargs.max_num_frames_per_episode=1000'])
    assert code == 0
    summary = json.loads((tmp_path / 'pong_ppo' / 'summary.json').read_text())
    assert summary['env_step'] == 256 and summary['train_iter'] == 2 * 4  # 2 rollouts x 4 epochs x 1 batch
