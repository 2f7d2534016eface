"""Demonstrations from the CLI: record them with a trained policy, then imitate them with SQIL."""
import json

import pytest
import torch

from tidal.entry.cli import main
from tidal.worker.demos import load_demos

SMALL = ['--set', 'policy.model.actor_hidden_sizes=[16]', '--set', 'policy.model.critic_hidden_sizes=[16]',
         '--set', 'policy.learn.batch_size=16', '--set', 'policy.random_collect_size=50',
         '--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', '--no-progress']


@pytest.fixture
def expert_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'pendulum_sac', '--max-env-step', '100', '--exp-name', 'expert', *SMALL]) == 0
    return tmp_path / 'expert'


def test_collect_demos_then_train_sqil(expert_run, capsys):
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '2',
                 '-o', 'demos.npz']) == 0
    assert 'wrote 2 episodes to demos.npz' in capsys.readouterr().out
    demos = load_demos('demos.npz')
    assert demos.metadata['env_id'] == 'Pendulum-v1' and demos.metadata['deterministic'] is True
    assert demos.metadata['episode_lengths'] == [200, 200] and len(demos.metadata['returns']) == 2
    assert demos.columns['obs'].shape == (400, 3) and demos.columns['action'].abs().max() <= 1.0

    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '120', '--exp-name', 'sqil',
                 '--set', 'policy.expert_data_path=demos.npz', '--set', 'env.stop_value=null',
                 '--set', 'policy.learn.learner.log_freq=10', *SMALL]) == 0
    summary = json.loads((expert_run.parent / 'sqil' / 'summary.json').read_text())
    assert summary['env_step'] == 120 and summary['train_iter'] == 70
    log = (expert_run.parent / 'sqil' / 'log.txt').read_text()
    assert 'cos_similarity=' in log and 'expert_td_error=' in log


def test_sqil_learns_from_nstep_windows_of_both_halves(expert_run, capsys):
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 '-o', 'demos.npz']) == 0
    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '120', '--exp-name', 'sqil3',
                 '--set', 'policy.expert_data_path=demos.npz', '--set', 'env.stop_value=null',
                 '--set', 'policy.nstep=3', *SMALL]) == 0
    summary = json.loads((expert_run.parent / 'sqil3' / 'summary.json').read_text())
    assert summary['env_step'] == 120 and summary['train_iter'] == 70


def test_collect_demos_takes_config_layers_and_set_overrides(expert_run, capsys):
    (expert_run.parent / 'short.yaml').write_text('env:\n  env_kwargs: {max_episode_steps: 50}\n')
    assert main(['collect-demos', 'expert/config.yaml', '--config', 'short.yaml', '--ckpt', 'expert/ckpt/latest.pt',
                 '--episodes', '2', '-o', 'short.npz']) == 0
    assert load_demos('short.npz').metadata['episode_lengths'] == [50, 50]
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 '-o', 'shorter.npz', '--set', 'env.env_kwargs={max_episode_steps: 30}']) == 0
    assert load_demos('shorter.npz').metadata['episode_lengths'] == [30]


def test_sqil_refuses_demos_of_another_env(expert_run, capsys):
    assert main(['train', 'cartpole_discrete_sac', '--max-env-step', '60', '--exp-name', 'cart', *SMALL]) == 0
    assert main(['collect-demos', 'cart/config.yaml', '--ckpt', 'cart/ckpt/latest.pt', '--episodes', '1',
                 '-o', 'cart.npz']) == 0
    capsys.readouterr()
    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '60', '--exp-name', 'bad',
                 '--set', 'policy.expert_data_path=cart.npz', *SMALL]) == 2
    err = capsys.readouterr().err
    assert err == ("tidal: error: demonstration file 'cart.npz' was recorded on env 'CartPole-v1', "
                   "but env.env_id is 'Pendulum-v1'\n")


def test_sqil_without_demonstrations_says_how_to_get_them(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'pendulum_sqil_sac', '--max-env-step', '60', '--set', 'policy.expert_data_path=',
                 *SMALL]) == 2
    assert 'set policy.expert_data_path (record them with tidal collect-demos)' in capsys.readouterr().err


def test_sqil_batches_are_half_agent_half_expert(expert_run):
    from tidal.entry.setup import load_config
    from tidal.entry.run import Run
    from tidal.worker.feeds.sqil import SQILFeed

    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 '-o', 'demos.npz']) == 0
    cfg = load_config('pendulum_sqil_sac', overrides=['policy.expert_data_path=demos.npz', 'exp_name=half',
                                                      'policy.learn.batch_size=10'])
    feed = Run(cfg, expert_run.parent / 'half', SQILFeed, max_train_iter=1, progress=False).feed
    agent = {'obs': torch.full((4, 3), 7.0), 'action': torch.zeros(4, 1), 'reward': torch.full((4,), -3.0),
             'next_obs': torch.full((4, 3), 7.0), 'terminated': torch.zeros(4, dtype=torch.bool),
             'truncated': torch.zeros(4, dtype=torch.bool)}
    feed.buffer.extend(agent)
    batch = feed.sample_batch()
    assert batch['expert'].tolist() == [False] * 5 + [True] * 5
    assert (batch['obs'][:5] == 7.0).all() and not (batch['obs'][5:] == 7.0).all(dim=1).any()
    expert_obs = load_demos('demos.npz').columns['obs']
    assert all((expert_obs == row).all(dim=1).any() for row in batch['obs'][5:])
