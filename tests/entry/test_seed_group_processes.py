"""A seed group over several processes: the split, a seed trained the same in whichever process holds it, the
driver's one display and end line, a signal to the driver, a worker killed, and resume after each."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from easydict import EasyDict

from tidal.entry.cli import main
from tidal.entry.group_run import group_result
from tidal.entry.group_shares import local_processes, seed_list, split_seeds
from tidal.entry.pipelines import resume, resumed_shares, train
from tidal.entry.result import GroupResult
from tidal.worker.checkpoint import load_checkpoint

from group_runs import assert_same_model, final_model, returns  # tests/entry is on sys.path

STEPS = 2048
SHORT = 1024  # two PPO rollouts and their updates


def test_split_seeds_into_near_equal_consecutive_shares():
    assert split_seeds([0, 1, 2, 3, 4, 5, 6, 7], 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert split_seeds([0, 1, 2, 3, 4, 5, 6, 7], 3) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert split_seeds([5, 9], 4) == [[5], [9]]  # never more shares than seeds
    assert split_seeds([5, 9], 0) == [[5, 9]]


def test_seed_list_reads_runs_as_ranges():
    assert seed_list([0, 1, 2, 3]) == '0-3'
    assert seed_list([0, 1]) == '0, 1'
    assert seed_list([0, 2, 5, 6, 7]) == '0, 2, 5-7'


def test_processes_default_to_the_usable_cores_at_most_one_per_seed(monkeypatch):
    cfg = EasyDict(policy={'device': 'cpu'}, seed_group={'processes': 0})
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    assert local_processes(cfg, 16) == (6, 'one per usable core')
    assert local_processes(cfg, 4) == (4, 'one per usable core')
    cfg.seed_group.processes = 3
    assert local_processes(cfg, 16) == (3, 'seed_group.processes')
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0}, raising=False)
    cfg.seed_group.processes = 0
    assert local_processes(cfg, 16) == (1, 'one usable core')


def test_on_cuda_one_process_per_visible_gpu_each_seeing_its_own(monkeypatch):
    from tidal.entry.group_processes import ProcessRunner
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 4)
    cfg = EasyDict(policy={'device': 'cuda'}, seed_group={'processes': 0})
    assert local_processes(cfg, 32) == (4, 'one per GPU')
    assert local_processes(cfg, 2) == (2, 'one per GPU')
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '2,3')
    assert ProcessRunner(cfg).gpus == ['2', '3']
    cfg.policy.device = 'cuda:1'  # a GPU the config names: the group stays there, as one process
    assert local_processes(cfg, 32) == (1, 'on cuda:1')
    assert ProcessRunner(cfg).gpus == []


def test_resumed_shares_keep_the_split_and_part_seeds_at_other_env_steps():
    spec = {'seeds': [0, 1, 2, 3, 4], 'shares': [[0, 1, 2], [3, 4]]}
    at = lambda step: {'collector': {'env_step': step}}  # noqa: E731
    states = {0: at(1024), 1: at(1024), 2: at(2048), 4: None}  # seed 3 ended
    assert resumed_shares(spec, states) == [[0, 1], [2], [4]]
    assert resumed_shares({'seeds': [0, 1]}, {0: at(5), 1: at(5)}) == [[0, 1]]  # a group from before shares


@pytest.fixture(scope='module')
def in_one(tmp_path_factory):
    """Seeds 0, 1 and 2 in one process: the reference every split must equal."""
    group_dir = tmp_path_factory.mktemp('one') / 'g'
    train('cartpole_ppo', seeds=[0, 1, 2], max_env_step=SHORT, progress=False,
          overrides=[f'exp_name={group_dir}', 'seed_group.processes=1'])
    return group_dir


def test_a_seed_trains_the_same_in_whichever_process_holds_it(in_one, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'cartpole_ppo', '--seeds', '3', '--processes', '2', '--max-env-step', str(SHORT),
                 '--no-progress', '--exp-name', 'g']) == 0
    group_dir = tmp_path / 'g'
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f'tidal: training ppo on CartPole-v1, seeds 0-2 in g: 2 processes of 2 or 1 seeds each, '
                      f'stacked (seed_group.processes; 1.2M parameters x batch rows per update, at most 40M), '
                      f'device cpu, collector local, 8 envs (numpy env manager)')
    assert out[-1].startswith('tidal: group of 3 seeds ended; last eval return median')
    assert sum(f'run ended (budget of {SHORT} env steps reached)' in line for line in out) == 3
    assert json.loads((group_dir / 'group.json').read_text())['shares'] == [[0, 1], [2]]
    for seed in (0, 1, 2):  # two rollouts and their 80 updates, then the evaluation after them
        assert returns(group_dir / f'seed_{seed}') == returns(in_one / f'seed_{seed}'), seed
        assert_same_model(final_model(group_dir / f'seed_{seed}'), final_model(in_one / f'seed_{seed}'), 1e-5)
    summary = json.loads((group_dir / 'aggregate' / 'summary.json').read_text())
    assert [entry['seed'] for entry in summary['seeds']] == [0, 1, 2]
    assert summary['env_steps_per_s'] == pytest.approx(3 * SHORT / summary['wall_time'])
    assert (group_dir / 'aggregate' / 'curve.png').is_file()
    assert not list(group_dir.glob('commit*.json'))

    # the Python form's result, as a group in one process gives it: every seed's policy, folder and evaluations
    result = group_result(group_dir)
    assert isinstance(result, GroupResult) and [run.run_dir.name for run in result.runs] == ['seed_0', 'seed_1',
                                                                                             'seed_2']
    for run in result.runs:
        assert [row['env_step'] for row in run.evals] == [0, SHORT]
        weights = run.policy.model.state_dict()
        assert_same_model({key: weights[key] for key in final_model(run.run_dir)}, final_model(run.run_dir), 0)


def test_a_bad_config_stops_every_process_in_one_line_and_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(['train', 'cartpole_ppo', '--seeds', '2', '--processes', '2', '--max-env-step', '1024',
                 '--no-progress', '--exp-name', 'bad', '--set', 'env.env_id=CartPole-v404'])
    err = capsys.readouterr().err
    assert code == 2 and 'CartPole-v404' in err and 'Traceback' not in err
    assert not (tmp_path / 'bad').exists()


def test_processes_needs_seeds(capsys):
    assert main(['train', 'cartpole_ppo', '--processes', '2', '--max-env-step', '1024']) == 2
    assert '--processes spreads the seeds of a group' in capsys.readouterr().err


# ----- signals and faults, through the command line in a process of its own ----------------------------------

def start_group(tmp_path, steps, *extra):
    cmd = [sys.executable, '-m', 'tidal', 'train', 'cartpole_ppo', '--seeds', '3', '--processes', '2',
           '--max-env-step', str(steps), '--no-progress', '--exp-name', 'g', *extra]
    return subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def workers_of(driver_pid):
    """(pid, command line) of the driver's worker processes."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as file:
                    parent = int(file.read().rsplit(')', 1)[1].split()[1])
                with open(f'/proc/{entry}/cmdline') as file:
                    cmdline = file.read().replace('\0', ' ')
            except OSError:
                continue
            if parent == driver_pid and 'group_worker' in cmdline:
                found.append((int(entry), cmdline))
    return found


def wait_for(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.2)


def trained_past(group_dir, seeds, rows=2):
    """Every seed of `seeds` has `rows` evaluations (it is training, past its first update)."""
    for seed in seeds:
        path = group_dir / f'seed_{seed}' / 'evals.csv'
        if not path.is_file() or len(path.read_text().splitlines()) < rows + 1:
            return False
    return True


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='reads the processes from /proc')
def test_sigterm_to_the_driver_checkpoints_every_process_and_resume_is_exact(tmp_path):
    steps = 4 * STEPS
    driver = start_group(tmp_path, steps)
    group_dir = tmp_path / 'g'
    wait_for(lambda: trained_past(group_dir, (0, 1, 2)))
    workers = [pid for pid, _ in workers_of(driver.pid)]
    assert len(workers) == 2
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 128 + signal.SIGTERM, err
    assert 'every seed saved a checkpoint; continue with: tidal resume g' in err
    for pid in workers:  # no worker outlives its group
        assert not os.path.exists(f'/proc/{pid}') or open(f'/proc/{pid}/stat').read().split()[2] == 'Z'
    for seed in (0, 1, 2):
        state = load_checkpoint(group_dir / f'seed_{seed}' / 'ckpt' / 'latest.pt')
        assert not state['finished'] and 0 < state['collector']['env_step'] < steps
    result = resume(group_dir, progress=False)
    assert isinstance(result, GroupResult)
    reference = tmp_path / 'ref'
    train('cartpole_ppo', seeds=[0, 1, 2], max_env_step=steps, progress=False,
          overrides=[f'exp_name={reference}', 'seed_group.processes=2'])
    for seed in (0, 1, 2):
        assert returns(group_dir / f'seed_{seed}') == returns(reference / f'seed_{seed}'), seed
        assert_same_model(final_model(group_dir / f'seed_{seed}'), final_model(reference / f'seed_{seed}'), 1e-6)


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='reads the processes from /proc')
def test_a_killed_process_is_named_by_its_seeds_the_others_finish_and_resume_continues_it(tmp_path):
    driver = start_group(tmp_path, STEPS * 4)
    group_dir = tmp_path / 'g'
    wait_for(lambda: trained_past(group_dir, (2,)))
    (victim, cmdline), = [(pid, cmd) for pid, cmd in workers_of(driver.pid) if '--seeds 2 ' in cmd]
    os.kill(victim, signal.SIGKILL)
    out, err = driver.communicate(timeout=300)
    assert driver.returncode == 3, err
    assert f'tidal: seed 2 stopped: its process (pid {victim}) was killed by SIGKILL; its last checkpoint is kept' in err
    assert "is incomplete: 1 of its seeds stopped short (2); continue them with: tidal resume g" in err
    for seed in (0, 1):
        assert json.loads((group_dir / f'seed_{seed}' / 'summary.json').read_text())['env_step'] == STEPS * 4
    assert 'group of 3 seeds ended' not in out
    result = resume(group_dir, progress=False)
    assert json.loads((group_dir / 'seed_2' / 'summary.json').read_text())['env_step'] == STEPS * 4
    assert [run.run_dir.name for run in result.runs] == ['seed_0', 'seed_1', 'seed_2']
    assert len(returns(group_dir / 'seed_2')) == 9  # every 1024 env steps, from 0: none lost, none twice


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='reads the processes from /proc')
def test_a_killed_driver_leaves_no_process_its_workers_checkpoint_and_stop(tmp_path):
    driver = start_group(tmp_path, STEPS * 4, '--set', 'env.stop_value=1000')  # every seed trains to its budget
    group_dir = tmp_path / 'g'
    wait_for(lambda: trained_past(group_dir, (0, 1, 2)))
    workers = [pid for pid, _ in workers_of(driver.pid)]
    assert len(workers) == 2
    driver.kill()
    driver.communicate(timeout=60)

    def gone(pid):
        try:
            with open(f'/proc/{pid}/stat') as file:
                return file.read().rsplit(')', 1)[1].split()[0] == 'Z'
        except OSError:
            return True
    wait_for(lambda: all(gone(pid) for pid in workers), timeout=120)
    for seed in (0, 1, 2):  # each stopped at a checkpoint of its own making, not at the start
        state = load_checkpoint(group_dir / f'seed_{seed}' / 'ckpt' / 'latest.pt')
        assert not state['finished'] and state['collector']['env_step'] > 0
    resume(group_dir, progress=False)
    for seed in (0, 1, 2):
        assert json.loads((group_dir / f'seed_{seed}' / 'summary.json').read_text())['env_step'] == STEPS * 4
