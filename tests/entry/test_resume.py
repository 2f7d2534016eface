"""Runs that survive a crash: exact resume, logs without repeats, checkpoints on schedule and on signals."""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal

import gymnasium
import pytest
import torch
from gymnasium.envs.classic_control.pendulum import PendulumEnv

from tidal import serial_pipeline
from tidal.entry.pipelines import resume
from tidal.worker.feeds.replay import ReplayFeed
from tidal.entry.run import RunInterrupted
from tidal.base.errors import CheckpointError, TidalError
from tidal.base.nest import tree_leaves
from tidal.rl_utils import StepType
from tidal.worker.checkpoint import load_checkpoint

OPAQUE_ID = 'tidal_test/OpaquePendulum-v0'


class OpaquePendulum(PendulumEnv):
    """Pendulum holding state that is not plain data (like a physics engine's handle): no snapshot."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.engine = object()


gymnasium.register(OPAQUE_ID, entry_point=OpaquePendulum, max_episode_steps=40)

SHORT = ['policy.random_collect_size=50', 'policy.learn.batch_size=16', 'env.n_evaluator_episode=1',
         'policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]',
         'policy.learn.learner.save_ckpt_freq=40', 'policy.eval.evaluator.eval_freq=60', 'env.stop_value=null']
STEPS = 330


class Crash(Exception):
    """Stands for a kill: the process stops between two checkpoints."""


def train(tmp_path, name, config='pendulum_sac', overrides=(), steps=STEPS):
    return serial_pipeline(config, seed=1, max_env_step=steps, progress=False,
                           overrides=[*SHORT, f'exp_name={tmp_path / name}', *overrides])


def crash_after(monkeypatch, feed_steps):
    """Make the replay feed raise at its `feed_steps`-th step."""
    original, calls = ReplayFeed.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) >= feed_steps:
            raise Crash
        return original(self, env_budget)
    monkeypatch.setattr(ReplayFeed, 'step', step)


def eval_rows(run):
    with open(run / 'evals.csv') as f:
        return [(row['env_step'], row['train_iter'], row['return_mean'], row['collect_return_mean'])
                for row in csv.DictReader(f)]


def assert_same_run(done, resumed):
    first, second = load_checkpoint(done / 'ckpt' / 'latest.pt'), load_checkpoint(resumed / 'ckpt' / 'latest.pt')
    for part in ('policy', 'feed'):
        left, right = ({path: leaf for path, leaf in tree_leaves(state[part]) if isinstance(leaf, torch.Tensor)}
                       for state in (first, second))
        assert left.keys() == right.keys()
        for key in left:
            assert torch.equal(left[key], right[key]), f'{part}{key} differs'
    assert first['train_iter'] == second['train_iter'] and first['finished'] == second['finished']
    assert eval_rows(done) == eval_rows(resumed)


@pytest.mark.parametrize('config, crash_at', [('pendulum_sac', 2), ('pendulum_sac', 97), ('pendulum_sac', 250),
                                              ('pendulum_taac', 130)])
def test_crashed_run_resumes_bit_identical_to_the_uninterrupted_one(tmp_path, monkeypatch, config, crash_at):
    overrides = ['env.env_kwargs.max_episode_steps=40'] if config == 'pendulum_taac' else []
    train(tmp_path, 'whole', config, overrides)
    with pytest.raises(Crash):
        crash_after(monkeypatch, crash_at)
        train(tmp_path, 'crashed', config, overrides)
    monkeypatch.undo()
    resume(tmp_path / 'crashed', progress=False)
    assert_same_run(tmp_path / 'whole', tmp_path / 'crashed')


@pytest.mark.gpu
@pytest.mark.parametrize('compile_mode', ['none', 'reduce-overhead'])
def test_crashed_gpu_run_resumes_bit_identical_to_the_uninterrupted_one(tmp_path, monkeypatch, compile_mode):
    """On CUDA too: the replay's indices are drawn on the CPU and the CUDA generator's state is in the checkpoint."""
    overrides = ['policy.device=cuda', f'policy.learn.compile={compile_mode}']
    train(tmp_path, 'whole', 'pendulum_sac', overrides)
    with pytest.raises(Crash):
        crash_after(monkeypatch, 130)
        train(tmp_path, 'crashed', 'pendulum_sac', overrides)
    monkeypatch.undo()
    resume(tmp_path / 'crashed', progress=False)
    assert_same_run(tmp_path / 'whole', tmp_path / 'crashed')


@pytest.mark.parametrize('config', ['pendulum_sac', 'pendulum_taac'])
def test_crashed_run_with_reward_normalization_resumes_bit_identical(tmp_path, monkeypatch, config):
    # 40-step episodes: the running returns restart within the run, and the crash falls mid-episode
    overrides = ['policy.normalize.reward=true', 'policy.normalize.clip=1.0', 'env.env_kwargs.max_episode_steps=40']
    train(tmp_path, 'whole', config, overrides)
    with pytest.raises(Crash):
        crash_after(monkeypatch, 130)
        train(tmp_path, 'crashed', config, overrides)
    monkeypatch.undo()
    saved = load_checkpoint(tmp_path / 'crashed' / 'ckpt' / 'latest.pt')
    assert float(saved['policy']['reward_rms']['count']) > 1  # the statistics travel in the checkpoint
    resume(tmp_path / 'crashed', progress=False)
    assert_same_run(tmp_path / 'whole', tmp_path / 'crashed')


def test_crashed_mujoco_run_resumes_its_envs_mid_episode_bit_identical(tmp_path, monkeypatch, capsys):
    overrides = ['env.evaluator_env_num=1']
    train(tmp_path, 'whole', 'hopper_sac', overrides)
    with pytest.raises(Crash):
        crash_after(monkeypatch, 150)  # the checkpoint at train iteration 120 holds env step 170
        train(tmp_path, 'crashed', 'hopper_sac', overrides)
    monkeypatch.undo()
    checkpoint = load_checkpoint(tmp_path / 'crashed' / 'ckpt' / 'latest.pt')
    layers = checkpoint['collector']['env']['envs'][0]['layers']
    assert [layer['state']['_elapsed_steps'] for layer in layers if layer['class'] == 'TimeLimit'][0] > 0
    capsys.readouterr()
    resume(tmp_path / 'crashed', progress=False)
    assert 'restart their episodes' not in capsys.readouterr().out
    assert_same_run(tmp_path / 'whole', tmp_path / 'crashed')


def test_env_step_schedules_resume_exactly(tmp_path, monkeypatch):
    """Evaluations, logs and checkpoints due by env steps continue where the killed run left them."""
    overrides = ['policy.eval.evaluator.eval_freq=1000', 'policy.eval.evaluator.eval_freq_env_steps=70',
                 'policy.learn.learner.log_freq=1000', 'policy.learn.learner.log_freq_env_steps=45',
                 'policy.learn.learner.save_ckpt_freq=1000', 'policy.learn.learner.save_ckpt_freq_env_steps=80']
    train(tmp_path, 'whole', overrides=overrides)
    with pytest.raises(Crash):
        crash_after(monkeypatch, 200)  # after the checkpoint at env step 211 and the log at 231
        train(tmp_path, 'crashed', overrides=overrides)
    monkeypatch.undo()
    resume(tmp_path / 'crashed', progress=False)
    assert_same_run(tmp_path / 'whole', tmp_path / 'crashed')
    assert [int(row[0]) for row in eval_rows(tmp_path / 'whole')] == [50, 120, 190, 260, 330]

    def train_lines(run):
        return [line.split('] ', 1)[1] for line in (run / 'log.txt').read_text().splitlines() if 'train @' in line]
    assert train_lines(tmp_path / 'crashed') == train_lines(tmp_path / 'whole') != []


def test_resume_drops_what_the_crashed_process_logged_after_its_checkpoint(tmp_path, monkeypatch, capsys):
    with pytest.raises(Crash):
        crash_after(monkeypatch, 200)  # after evaluations at 60, 120: the checkpoint at 160 comes first
        train(tmp_path, 'run')
    monkeypatch.undo()
    checkpoint = load_checkpoint(tmp_path / 'run' / 'ckpt' / 'latest.pt')
    capsys.readouterr()
    resume(tmp_path / 'run', progress=False)
    assert capsys.readouterr().out.splitlines()[0] == (
        f"tidal: {tmp_path / 'run'}: resumed at env step {checkpoint['collector']['env_step']}, train iteration "
        f"{checkpoint['train_iter']}")
    rows = eval_rows(tmp_path / 'run')
    assert len(rows) == len(set(rows)) and [int(r[1]) for r in rows] == [0, 60, 120, 180, 240, 280]
    lines = (tmp_path / 'run' / 'log.txt').read_text().splitlines()
    train_lines = [line.split('] ', 1)[1] for line in lines if 'train @' in line]
    assert len(train_lines) == len(set(train_lines)) == 2  # iterations 100 and 200, each once
    assert any('resumed at env step' in line for line in lines)
    events = list((tmp_path / 'run' / 'log').glob('events.out.tfevents.*'))
    assert len(events) == 2 and all(path.stat().st_size > 0 for path in events)


def test_resuming_an_ended_run_says_so_and_changes_nothing(tmp_path, capsys):
    train(tmp_path, 'done', steps=120)
    run = tmp_path / 'done'
    before = {path: path.read_bytes() for path in run.rglob('*') if path.is_file()}
    capsys.readouterr()
    assert resume(run, progress=False) is None
    assert 'already ended (budget of 120 env steps reached); nothing to resume' in capsys.readouterr().out
    assert {path: path.read_bytes() for path in run.rglob('*') if path.is_file()} == before


def test_a_run_killed_before_its_first_checkpoint_starts_again_from_the_beginning(tmp_path, monkeypatch, capsys):
    train(tmp_path, 'whole', steps=120)

    def killed_while_starting(self, *args, **kwargs):
        raise Crash
    monkeypatch.setattr('tidal.entry.run.Run.__init__', killed_while_starting)
    monkeypatch.setattr('tidal.entry.setup.shutil.rmtree', lambda *args, **kwargs: None)  # as after a kill
    with pytest.raises(Crash):
        train(tmp_path, 'early', steps=120)
    monkeypatch.undo()
    run = tmp_path / 'early'
    assert (run / 'config.yaml').is_file() and not (run / 'ckpt').exists()
    (run / 'log.txt').write_text('written by the killed process\n')
    capsys.readouterr()
    resume(run, progress=False)
    assert 'stopped before its first checkpoint; it starts again from the beginning' in capsys.readouterr().out
    assert_same_run(tmp_path / 'whole', run)
    assert 'written by the killed process' not in (run / 'log.txt').read_text()


def test_run_folder_without_a_checkpoint_or_budget_says_how_to_start_again(tmp_path):
    train(tmp_path, 'done', steps=60)
    run = tmp_path / 'done'
    shutil.rmtree(run / 'ckpt')
    (run / 'summary.json').unlink()
    with pytest.raises(CheckpointError, match="has no checkpoint and no budget in its summary.json; start it again"):
        resume(run, progress=False)


def test_a_checkpoint_exists_from_the_start_and_right_after_the_warm_up(tmp_path, monkeypatch):
    with pytest.raises(Crash):
        crash_after(monkeypatch, 2)  # the warm-up of 50 steps is one feed step
        train(tmp_path, 'early')
    state = load_checkpoint(tmp_path / 'early' / 'ckpt' / 'latest.pt')
    assert state['collector']['env_step'] == 50 and state['train_iter'] == 0 and state['last_eval_iter'] == 0


def test_the_collection_after_the_warm_up_stops_at_the_env_step_budget(tmp_path):
    train(tmp_path, 'tiny', overrides=['policy.random_collect_size=30', 'policy.collect.n_sample=20'], steps=37)
    state = load_checkpoint(tmp_path / 'tiny' / 'ckpt' / 'latest.pt')
    assert state['collector']['env_step'] == 37 and state['feed']['buffer']['size'] == 37  # 30 random, 7 of 20
    assert state['train_iter'] == 1


def test_sigterm_checkpoints_and_the_resumed_run_ends_where_the_whole_one_does(tmp_path, monkeypatch):
    train(tmp_path, 'whole')
    original, calls = ReplayFeed.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == 77:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, env_budget)
    monkeypatch.setattr(ReplayFeed, 'step', step)
    with pytest.raises(RunInterrupted, match=r'SIGTERM at env step 126: checkpoint saved; continue with: tidal resume'):
        train(tmp_path, 'stopped')
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')['collector']['env_step'] == 126
    resume(tmp_path / 'stopped', progress=False)
    assert_same_run(tmp_path / 'whole', tmp_path / 'stopped')


def test_run_says_in_one_line_how_it_ended(tmp_path, capsys):
    train(tmp_path, 'said', steps=90)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith('tidal: run ended (budget of 90 env steps reached) at env step 90; eval return best ')
    assert f"run folder {tmp_path / 'said'} ({tmp_path / 'said' / 'curve.png'}, " in out[-1]


def test_envs_that_cannot_be_saved_restart_their_episodes_and_the_resume_says_so(tmp_path, monkeypatch, capsys):
    overrides = [f'env.env_id={OPAQUE_ID}', 'policy.random_collect_size=64', 'policy.learn.batch_size=8',
                 'policy.learn.learner.save_ckpt_freq=30']
    with pytest.raises(Crash):
        crash_after(monkeypatch, 45)  # the checkpoint at train iteration 30 holds env step 94, mid-episode
        train(tmp_path, 'opaque', 'pendulum_taac', overrides, steps=130)
    monkeypatch.undo()
    capsys.readouterr()
    resume(tmp_path / 'opaque', progress=False)
    assert ("tidal: resume: the collector envs restart their episodes (OpaquePendulum cannot be snapshot: "
            "attribute 'engine' holds an object)") in capsys.readouterr().out
    columns = load_checkpoint(tmp_path / 'opaque' / 'ckpt' / 'latest.pt')['feed']['buffer']['columns']
    # row 94 opens a new episode, so no replayed sequence runs on from row 93 as if it were the same one
    assert (columns['step_type'] == StepType.FIRST).nonzero().flatten().tolist() == [0, 40, 80, 94]
    assert not columns['prev_tau'][94].any()


def test_sigterm_to_the_cli_ends_with_one_line_and_the_signal_exit_code(tmp_path):
    import subprocess
    import sys
    import time
    command = [sys.executable, '-m', 'tidal', 'train', 'pendulum_sac', '--max-env-step', '100000', '--no-progress',
               '--exp-name', 'run', *[arg for item in SHORT for arg in ('--set', item)]]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / 'run' / 'evals.csv').exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert err.strip().count('\n') == 0 and err.startswith('tidal: stopped: SIGTERM at env step ')
    assert 'checkpoint saved; continue with: tidal resume run' in err
    assert load_checkpoint(tmp_path / 'run' / 'ckpt' / 'latest.pt')['finished'] is None
    # the outcome is said once: the end line names the signal, the error line says where to continue
    assert out.splitlines()[-1].startswith('tidal: run ended (stopped by SIGTERM) at env step ')
    assert 'continue with' not in out


def test_resuming_a_folder_that_does_not_exist_says_so(tmp_path):
    with pytest.raises(TidalError, match=f"run folder '{tmp_path / 'nowhere'}' does not exist"):
        resume(tmp_path / 'nowhere', progress=False)


def scalar_events(run):
    """(tag, env step) of every scalar in the run's event files, in file order, and the files' count."""
    from tensorboardX.proto.event_pb2 import Event

    from tidal.worker.event_files import event_records
    files = sorted((run / 'log').glob('events.out.tfevents.*'))
    events = [(value.tag, event.step) for path in files for event in map(Event.FromString, event_records(path))
              for value in event.summary.value]
    return events, [path for path in files if not any(Event.FromString(r).HasField('summary')
                                                      for r in event_records(path))]


@pytest.mark.parametrize('killed_write', [2, 5])
def test_a_kill_inside_a_checkpoint_write_leaves_each_event_once_and_no_empty_event_file(tmp_path, monkeypatch,
                                                                                         killed_write):
    """The kill lands after the evaluation at the checkpoint's env step and before latest.pt is replaced; the
    resume goes back to the checkpoint before: the 2nd write (env step 50, after the first evaluation) resumes from
    the first checkpoint, made before any scalar; the 5th (env step 170) from the one at 130."""
    train(tmp_path, 'whole')
    import tidal.worker.checkpoint as checkpoint
    original, writes = checkpoint.os.replace, []

    def replace(src, dst):
        if str(dst).endswith('latest.pt'):
            writes.append(dst)
            if len(writes) == killed_write:
                raise Crash
        return original(src, dst)
    monkeypatch.setattr(checkpoint.os, 'replace', replace)
    with pytest.raises(Crash):
        train(tmp_path, 'killed')
    monkeypatch.undo()
    resume(tmp_path / 'killed', progress=False)
    events, empty = scalar_events(tmp_path / 'killed')
    assert len(events) == len(set(events)) and sorted(events) == sorted(scalar_events(tmp_path / 'whole')[0])
    assert empty == []


def test_a_larger_budget_continues_an_ended_run_with_the_updates_of_the_longer_run(tmp_path, capsys):
    train(tmp_path, 'whole')
    train(tmp_path, 'extended', steps=200)
    resume(tmp_path / 'extended', progress=False, max_env_step=STEPS)
    whole, extended = (load_checkpoint(tmp_path / name / 'ckpt' / 'latest.pt') for name in ('whole', 'extended'))
    for key, weight in whole['policy']['model'].items():
        assert torch.equal(weight, extended['policy']['model'][key]), key
    assert extended['finished'] == f'budget of {STEPS} env steps reached'
    # the same updates; the evaluations count their period from the shorter run's concluding one, at its budget
    before = [row for row in eval_rows(tmp_path / 'whole') if int(row[0]) < 200]
    assert [row for row in eval_rows(tmp_path / 'extended') if int(row[0]) < 200] == before
    assert [row[0] for row in eval_rows(tmp_path / 'extended')][len(before):] == ['200', '260', '320', '330']


def test_a_budget_already_spent_is_refused_in_one_line_and_an_ended_run_says_how_to_extend_it(tmp_path, capsys):
    train(tmp_path, 'done', steps=120)
    with pytest.raises(TidalError, match=r"^run '.*done' stands at env step 120, train iteration \d+: a budget of "
                                         r"100 env steps is already spent; give one past it$"):
        resume(tmp_path / 'done', progress=False, max_env_step=100)
    capsys.readouterr()
    assert resume(tmp_path / 'done', progress=False) is None
    assert f"(tidal resume {tmp_path / 'done'} --max-env-step N continues it" in capsys.readouterr().out


def test_a_larger_budget_continues_every_seed_of_a_group_and_is_kept_in_its_group_file(tmp_path, capsys):
    group = tmp_path / 'group'
    serial_pipeline('pendulum_sac', seeds=[1, 2], max_env_step=120, progress=False,
                    overrides=[*SHORT, f'exp_name={group}'])
    resume(group, progress=False, max_env_step=180)
    assert json.loads((group / 'group.json').read_text())['max_env_step'] == 180
    for seed in (1, 2):
        state = load_checkpoint(group / f'seed_{seed}' / 'ckpt' / 'latest.pt')
        assert state['collector']['env_step'] == 180 and state['finished'] == 'budget of 180 env steps reached'
