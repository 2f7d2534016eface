"""Videos of the agent: `tidal eval --video` records exactly the evaluated episodes (one file each, the reset
frame and one frame per step), falls back to GIF without an MP4 encoder, refuses an env that cannot render in
one line; a run records one episode every `video_every` evaluations without changing its returns."""
import csv
import sys

import imageio_ffmpeg
import numpy as np
import pytest
from easydict import EasyDict
from PIL import Image

from tidal import serial_pipeline_onpolicy
from tidal.base.errors import EnvError
from tidal.config.layered import ConfigLayers
from tidal.entry.cli import main
from tidal.entry.evaluate import evaluate_checkpoint
from tidal.entry.pipelines import resume
from tidal.registry import ENV_REGISTRY
from tidal.worker.builders import build_env_manager
from tidal.worker.feeds.rollout import RolloutFeed

CARTPOLE_FRAME = (400, 600, 3)  # CartPole-v1's rgb_array render
# one rollout of 64 env steps, evaluations (one episode each) at the start and after every rollout
SHORT = ['env.collector_env_num=1', 'policy.collect.n_sample=64', 'policy.learn.batch_size=64',
         'policy.learn.epoch_per_collect=1', 'policy.eval.evaluator.eval_freq=1', 'env.n_evaluator_episode=1',
         'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[8]']


def _train(run_dir, video_every):
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=128, progress=False,
                             overrides=[*SHORT, f'policy.eval.evaluator.video_every={video_every}',
                                        f'exp_name={run_dir}'])
    with open(run_dir / 'evals.csv') as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """The same tiny CartPole PPO run without and with a video every 2 evaluations."""
    root = tmp_path_factory.mktemp('video_runs')
    return root, _train(root / 'plain', 0), _train(root / 'recorded', 2)


def _mp4_frames(path):
    """(frames, shape of a frame) as ffmpeg decodes the file."""
    reader = imageio_ffmpeg.read_frames(str(path))
    width, height = next(reader)['size']
    return sum(1 for _ in reader), (height, width, 3)


def test_run_records_one_episode_every_video_every_evaluations_with_unchanged_returns(runs):
    root, plain, recorded = runs
    assert [row['return_mean'] for row in recorded] == [row['return_mean'] for row in plain]
    assert [row['env_step'] for row in recorded] == ['0', '64', '128']
    assert sorted(path.name for path in (root / 'recorded' / 'videos').iterdir()) == ['eval_env0.mp4',
                                                                                    'eval_env128.mp4']
    assert not (root / 'plain' / 'videos').exists()
    for row in (recorded[0], recorded[2]):
        frames, shape = _mp4_frames(root / 'recorded' / 'videos' / f"eval_env{row['env_step']}.mp4")
        assert frames == int(float(row['episode_length_mean'])) + 1  # the reset frame, then one per step
        assert shape == CARTPOLE_FRAME
    # the key is saved with the run like any other
    assert 'video_every: 2' in (root / 'recorded' / 'config.yaml').read_text()


def test_a_resumed_run_keeps_counting_evaluations_for_its_videos(runs, tmp_path, monkeypatch):
    """Killed after its first evaluation (recorded) and its first checkpoint, the run resumes at the second
    evaluation, which it does not record, and records the third, as the uninterrupted run did."""
    step, calls = RolloutFeed.step, []

    def crash_at_first_rollout(self, env_budget):
        calls.append(1)
        if len(calls) == 1:
            raise Crash
        return step(self, env_budget)
    monkeypatch.setattr(RolloutFeed, 'step', crash_at_first_rollout)
    with pytest.raises(Crash):
        _train(tmp_path / 'run', 2)
    assert resume(tmp_path / 'run', progress=False) is not None
    with open(tmp_path / 'run' / 'evals.csv') as f:
        assert [row['return_mean'] for row in csv.DictReader(f)] == [row['return_mean'] for row in runs[2]]
    assert sorted(path.name for path in (tmp_path / 'run' / 'videos').iterdir()) == ['eval_env0.mp4',
                                                                                   'eval_env128.mp4']


class Crash(Exception):
    """Stands for a kill between two checkpoints."""


def test_eval_video_records_every_evaluated_episode_of_every_env(runs, tmp_path, capsys):
    root = runs[0] / 'plain'
    layer = tmp_path / 'two_envs.yaml'
    layer.write_text('env:\n  evaluator_env_num: 2\n')
    unrecorded = evaluate_checkpoint(ConfigLayers(str(root / 'config.yaml'), (str(layer),)),
                                     root / 'ckpt' / 'best.pt', episodes=3)
    assert main(['eval', str(root / 'config.yaml'), '--config', str(layer), '--ckpt', str(root / 'ckpt' / 'best.pt'),
                 '--episodes', '3', '--video', str(tmp_path / 'videos')]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f'eval return {unrecorded.return_mean:.2f} +- {unrecorded.return_std:.2f} over 3 episodes '
                   f'(mean length {unrecorded.length_mean:.1f})',  # the same episodes as without video
                   f"videos: 3 episodes in {tmp_path / 'videos'} (plain-episode-0.mp4 ... plain-episode-2.mp4)"]
    # env 0 plays episodes 0 and 1, env 1 episode 2: each file holds its episode's reset frame and steps
    recorded = [_mp4_frames(tmp_path / 'videos' / f'plain-episode-{n}.mp4') for n in range(3)]
    assert sorted(frames for frames, _ in recorded) == sorted(int(length) + 1 for length in unrecorded.lengths)
    assert {shape for _, shape in recorded} == {CARTPOLE_FRAME}


def test_eval_video_falls_back_to_gif_without_an_mp4_encoder(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, 'imageio_ffmpeg', None)  # as if it were not installed
    root = runs[0] / 'plain'
    assert main(['eval', str(root / 'config.yaml'), '--ckpt', str(root / 'ckpt' / 'best.pt'), '--episodes', '1',
                 '--video', str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == ('tidal: no MP4 encoder (imageio_ffmpeg is not installed; pip install '
                                    '-e ".[video]"): recording GIF instead')
    length = int(float(captured.out.split('mean length ')[1].split(')')[0]))
    with Image.open(tmp_path / 'plain-episode-0.gif') as gif:
        assert np.asarray(gif.convert('RGB')).shape == CARTPOLE_FRAME
        played = 0  # GIF merges a frame that repeats the previous one into it, so count the time it plays
        for index in range(gif.n_frames):
            gif.seek(index)
            played += gif.info['duration']
    assert played == (length + 1) * 20  # the reset frame and one per step, at CartPole's 50 frames per second


def test_eval_video_of_an_env_without_rgb_array_frames_fails_in_one_line_before_running(runs, tmp_path, capsys):
    root = runs[0] / 'plain'
    layer = tmp_path / 'counter.yaml'  # the test counter env declares no render modes
    layer.write_text("env:\n  env_id: tidal_test/Counter-v0\n")
    code = main(['eval', 'cartpole_ppo', '--config', str(layer), '--ckpt', str(root / 'ckpt' / 'best.pt'),
                 '--video', str(tmp_path / 'videos')])
    assert code == 2
    assert capsys.readouterr().err == ("tidal: error: env 'tidal_test/Counter-v0' cannot be recorded: it renders "
                                       "no 'rgb_array' frames (its render modes: none)\n")
    assert not (tmp_path / 'videos').exists()


def test_eval_video_without_the_drawing_package_names_it_and_the_extra_in_one_line(runs, tmp_path, capsys,
                                                                                  monkeypatch):
    monkeypatch.setitem(sys.modules, 'pygame', None)  # as if it were not installed: CartPole draws with it
    assert main(['eval', str(runs[0] / 'plain'), '--episodes', '1', '--video', str(tmp_path / 'videos')]) == 2
    assert capsys.readouterr().err == ("tidal: error: env 'CartPole-v1' draws its frames with pygame, which is not "
                                       'installed: pip install -e ".[video]"\n')
    assert not (tmp_path / 'videos').exists()


class PlainEnvType:
    """An env type of its own (not a GymEnv): it makes envs, but none that render."""

    def __init__(self, cfg):
        self.cfg = cfg

    def make(self, role='collector'):
        raise AssertionError('no env is made for a recording it cannot do')


def test_an_env_type_without_rendering_support_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(ENV_REGISTRY, 'build', lambda name, env_cfg: PlainEnvType(env_cfg))  # a user's own env type
    cfg = EasyDict(env=dict(type='test_video_plain', env_id='Plain-v0', evaluator_env_num=1),
                   env_manager=dict(type='base'))
    with pytest.raises(EnvError, match=r"^env 'Plain-v0' cannot be recorded: its env type 'test_video_plain' "
                                       r"makes no rendering envs"):
        build_env_manager(cfg, 'evaluator', render=True)


def test_eval_video_on_a_machine_without_a_desktop_session_prints_no_sdl_complaint(runs, tmp_path):
    """SDL needs XDG_RUNTIME_DIR for a display; tidal's frames are off-screen, so it asks SDL for none."""
    import os
    import subprocess
    root = runs[0] / 'plain'
    env = {key: value for key, value in os.environ.items() if key not in ('XDG_RUNTIME_DIR', 'SDL_VIDEODRIVER')}
    done = subprocess.run([sys.executable, '-m', 'tidal', 'eval', str(root), '--episodes', '1', '--video',
                           str(tmp_path / 'videos')], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 'XDG_RUNTIME_DIR' not in done.stderr + done.stdout
    assert (tmp_path / 'videos' / 'plain-episode-0.mp4').is_file()


def test_eval_takes_a_run_folder_for_its_config_and_checkpoint(runs, tmp_path, capsys):
    root = runs[0] / 'plain'
    expected = evaluate_checkpoint(str(root / 'config.yaml'), root / 'ckpt' / 'best.pt', episodes=2)
    line = (f'eval return {expected.return_mean:.2f} +- {expected.return_std:.2f} over 2 episodes '
            f'(mean length {expected.length_mean:.1f})\n')
    assert main(['eval', str(root), '--episodes', '2']) == 0  # the folder as CONFIG: its config and best.pt
    assert capsys.readouterr().out == line
    assert main(['eval', str(root / 'config.yaml'), '--ckpt', str(root), '--episodes', '2']) == 0
    assert capsys.readouterr().out == line
    assert main(['eval', 'cartpole_ppo']) == 2
    assert capsys.readouterr().err == ('tidal: error: tidal eval needs --ckpt CHECKPOINT_OR_RUN_FOLDER, or a run '
                                       'folder in place of CONFIG\n')
    assert main(['eval', str(tmp_path)]) == 2
    assert "is not a tidal run folder (it has no config.yaml)" in capsys.readouterr().err
