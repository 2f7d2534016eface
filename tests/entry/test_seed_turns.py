"""A seed group whose processes train their seeds in turn, each as the plain run `-s SEED` makes: when the group
takes that form, a seed equal to its plain run, and a signal and resume in the middle of a share."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from tidal.entry.group_shares import STACK_BOUND, stacking_pays, update_size
from tidal.entry.pipelines import resume, resumed_shares, train
from tidal.entry.setup import load_config
from tidal.worker.checkpoint import load_checkpoint

from group_runs import assert_same_model, final_model, returns  # tests/entry is on sys.path
from test_seed_group_processes import wait_for, trained_past

SHORT = 1024  # two PPO rollouts and their updates


def test_a_small_update_stacks_and_a_large_one_trains_in_turn():
    ppo = load_config('cartpole_ppo')  # 64x64 actor and critic, minibatches of 128
    params = sum(2 * (inputs * 64 + 64) for inputs in (4, 64)) + (64 * 2 + 2) + (64 + 1)
    assert update_size(ppo) == params * 128
    assert stacking_pays(ppo) == (True, f'{params * 128 / 1e6:.1f}M parameters x batch rows per update, at most '
                                        f'{STACK_BOUND / 1e6:.0f}M')
    sac = load_config('pendulum_sac')  # 256x256 actor and twin critics, batches of 256
    stacked, why = stacking_pays(sac)
    assert not stacked and update_size(sac) > STACK_BOUND
    assert why.endswith(f'above {STACK_BOUND / 1e6:.0f}M stacking does not pay on a CPU')
    assert stacking_pays(load_config('pendulum_sac', overrides=['seed_group.share=stacked'])) == (
        True, 'seed_group.share')
    assert stacking_pays(load_config('cartpole_ppo', overrides=['seed_group.share=in_turn'])) == (
        False, 'seed_group.share')


def test_a_bad_share_value_is_refused_naming_the_key():
    with pytest.raises(Exception, match='seed_group.share'):
        load_config('cartpole_ppo', overrides=['seed_group.share=sideways'])


def test_seeds_in_turn_resume_in_their_shares_whatever_their_env_steps():
    spec = {'seeds': [0, 1, 2, 3, 4], 'shares': [[0, 1, 2], [3, 4]], 'stacked': False}
    at = lambda step: {'collector': {'env_step': step}}  # noqa: E731
    states = {1: at(1024), 2: None, 3: at(4096), 4: None}  # seed 0 ended, seed 2 and 4 not begun
    assert resumed_shares(spec, states) == [[1, 2], [3, 4]]
    assert resumed_shares(spec, {3: None}) == [[3]]  # a share with nothing left to train is no share


def test_a_seed_in_turn_is_its_plain_run(tmp_path, capsys):
    group_dir, plain_dir = tmp_path / 'g', tmp_path / 'plain'
    train('cartpole_ppo', seeds=[0, 1], max_env_step=SHORT, progress=False,
          overrides=[f'exp_name={group_dir}', 'seed_group.processes=1', 'seed_group.share=in_turn'])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f'tidal: training ppo on CartPole-v1, seeds 0, 1 in {group_dir}: 1 process, in turn '
                             f'(seed_group.processes; seed_group.share), device cpu')
    assert json.loads((group_dir / 'group.json').read_text())['stacked'] is False
    assert out[-1].startswith('tidal: group of 2 seeds ended; last eval return median')
    train('cartpole_ppo', seed=1, max_env_step=SHORT, progress=False, overrides=[f'exp_name={plain_dir}'])
    assert returns(group_dir / 'seed_1') == returns(plain_dir)
    assert_same_model(final_model(group_dir / 'seed_1'), final_model(plain_dir), 0)


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='reads the processes from /proc')
def test_sigterm_stops_seeds_in_turn_checkpointed_and_resume_gives_the_plain_runs(tmp_path):
    steps = 8 * SHORT  # seed 0 is far from its end when the signal comes
    cmd = [sys.executable, '-m', 'tidal', 'train', 'cartpole_ppo', '--seeds', '3', '--processes', '2', '--max-env-step',
           str(steps), '--no-progress', '--exp-name', 'g', '--set', 'seed_group.share=in_turn']
    driver = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    group_dir = tmp_path / 'g'
    wait_for(lambda: trained_past(group_dir, (0, 2)))  # the first seed of each share trains
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 128 + signal.SIGTERM, err
    assert 'every seed saved a checkpoint; continue with: tidal resume g' in err
    assert not (group_dir / 'seed_1' / 'ckpt').exists()  # its turn had not come
    result = resume(group_dir, progress=False)
    assert [run.run_dir.name for run in result.runs] == ['seed_0', 'seed_1', 'seed_2']
    for seed in (0, 1, 2):
        plain_dir = tmp_path / f'plain_{seed}'
        train('cartpole_ppo', seed=seed, max_env_step=steps, progress=False, overrides=[f'exp_name={plain_dir}'])
        assert returns(group_dir / f'seed_{seed}') == returns(plain_dir), seed
        assert_same_model(final_model(group_dir / f'seed_{seed}'), final_model(plain_dir), 0)
        assert load_checkpoint(group_dir / f'seed_{seed}' / 'ckpt' / 'latest.pt')['finished']
