"""SQIL's expert as DI-engine gives it, a checkpoint at `policy.collect.model_path`: the run records its
demonstrations first, the same ones `tidal collect-demos` writes, and then trains exactly as it would on that file."""
import json

import pytest
import torch

from tidal.entry.cli import main
from tidal.entry.pipelines import train
from tidal.worker.demos import load_demos

EVAL = ['--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', '--no-progress']
SQIL = ['policy.random_collect_size=80', 'policy.collect.expert_episodes=2', 'env.n_evaluator_episode=1',
        'env.evaluator_env_num=1', 'env.stop_value=null']


@pytest.fixture
def expert(tmp_path, monkeypatch):
    """The run folder of a short CartPole DQN run."""
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'cartpole_dqn', '--max-env-step', '300', '--exp-name', 'expert',
                 '--set', 'policy.random_collect_size=100', *EVAL]) == 0
    return tmp_path / 'expert'


def test_model_path_trains_as_the_demonstration_file_of_collect_demos_would(expert, capsys):
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/best.pt', '--episodes', '2',
                 '-o', 'demos.npz', '-s', '3']) == 0
    from_file = train('cartpole_sqil', seed=3, max_env_step=304, progress=False,
                      overrides=[*SQIL, 'policy.expert_data_path=demos.npz', 'exp_name=from_file'])
    capsys.readouterr()
    recorded = train('cartpole_sqil', seed=3, max_env_step=304, progress=False,
                     overrides=[*SQIL, 'policy.collect.model_path=expert', 'exp_name=recorded'])
    out = capsys.readouterr().out
    returns = load_demos('demos.npz').metadata['returns']
    assert f"tidal: recorded 2 expert episodes from 'expert/ckpt/best.pt' (policy.collect.model_path), mean return " \
           f"{sum(returns) / 2:.2f}" in out  # the run folder's best checkpoint, acting greedily
    for a, b in zip(from_file.policy.learn_mode.state_dict()['model'].values(),
                    recorded.policy.learn_mode.state_dict()['model'].values()):
        assert torch.equal(a, b)  # the same demonstrations, and the run's random numbers left as they were
    assert json.loads((expert.parent / 'recorded' / 'summary.json').read_text())['train_iter'] == (304 - 80) // 8 * 3


def test_an_expert_data_path_wins_over_the_model_path(expert):
    assert main(['collect-demos', 'expert/config.yaml', '--ckpt', 'expert/ckpt/latest.pt', '--episodes', '1',
                 '-o', 'demos.npz']) == 0
    assert main(['train', 'cartpole_sqil', '--max-env-step', '200', '--set', 'policy.collect.model_path=nowhere',
                 '--set', 'policy.expert_data_path=demos.npz', '--set', 'policy.random_collect_size=80', *EVAL]) == 0


def test_an_expert_of_another_env_is_refused_in_one_line(expert, capsys):
    capsys.readouterr()
    assert main(['train', 'cartpole_sqil', '--max-env-step', '200', '--set', 'env.env_id=Acrobot-v1',
                 '--set', 'policy.collect.model_path=expert/ckpt/latest.pt', *EVAL]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "tidal: error: policy.collect.model_path 'expert/ckpt/latest.pt' is an expert of env 'CartPole-v1', but "
        "env.env_id is 'Acrobot-v1'")
    assert not (expert.parent / 'cartpole_sqil').exists()


def test_a_checkpoint_outside_a_run_folder_is_refused_in_one_line(expert, capsys):
    (expert.parent / 'loose.pt').write_bytes((expert / 'ckpt' / 'latest.pt').read_bytes())
    capsys.readouterr()
    assert main(['train', 'cartpole_sqil', '--max-env-step', '200', '--set', 'policy.collect.model_path=loose.pt',
                 *EVAL]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "tidal: error: policy.collect.model_path: no config.yaml in the folders above checkpoint 'loose.pt': "
        "policy.collect.model_path needs the run folder it was trained in")
