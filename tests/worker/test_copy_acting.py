"""Acting with a CPU copy of the collect mode (`policy.collect.acting_device='cpu'`): the copy is refreshed before
every collection and hands its running statistics back, so a run acting through it is the run acting itself."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from tidal.base.nest import tree_leaves
from tidal.entry.pipelines import train
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.copy_acting import CopyActingCollector
from tidal.worker.collectors import build_collector

RUNS = {
    'pendulum_ppo': (512, ['policy.collect.n_sample=128', 'policy.learn.batch_size=64']),  # obs and reward normalised
    'pendulum_sac': (300, ['policy.random_collect_size=100', 'policy.learn.batch_size=32']),
    'pendulum_taac': (300, ['policy.random_collect_size=100', 'policy.learn.batch_size=32']),  # acting state per env
}
EVAL = ['env.n_evaluator_episode=1', 'env.evaluator_env_num=1']


@pytest.mark.parametrize('config', sorted(RUNS))
def test_a_run_acting_through_a_cpu_copy_is_the_run_acting_itself(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps, overrides = RUNS[config]
    built = []
    original = build_collector

    def recorded(cfg, policy, **kwargs):
        collector = original(cfg, policy, **kwargs)
        built.append(collector)
        return collector

    monkeypatch.setattr('tidal.entry.run.build_collector', recorded)
    train(config, seed=3, max_env_step=steps, progress=False, overrides=[*overrides, *EVAL, 'exp_name=itself'])
    train(config, seed=3, max_env_step=steps, progress=False,
          overrides=[*overrides, *EVAL, 'exp_name=copy', 'policy.collect.acting_device=cpu'])
    assert not isinstance(built[0], CopyActingCollector) and isinstance(built[1], CopyActingCollector)
    itself, copy = (load_checkpoint(tmp_path / name / 'ckpt' / 'latest.pt') for name in ('itself', 'copy'))
    for part in ('policy', 'collector'):
        left, right = dict(tree_leaves(itself[part], sequences=True)), dict(tree_leaves(copy[part], sequences=True))
        assert left.keys() == right.keys()
        for key in left:
            assert same(left[key], right[key]), f'{part} {key} differs'
    assert eval_returns(tmp_path / 'itself') == eval_returns(tmp_path / 'copy')


def same(left, right) -> bool:
    if isinstance(left, torch.Tensor):
        return torch.equal(left, right)
    if isinstance(left, np.ndarray):
        return np.array_equal(left, right)
    return left == right


def eval_returns(run_dir):
    with open(run_dir / 'evals.csv') as file:
        return [(row['env_step'], row['return_mean'], row['collect_return_mean']) for row in csv.DictReader(file)]


def test_a_seed_group_refuses_acting_through_a_copy():
    from tidal.base.errors import ConfigError
    with pytest.raises(ConfigError, match=r"policy\.collect\.acting_device: a seed group acts for all its seeds"):
        train('pendulum_sac', seeds=[0, 1], max_env_step=300, progress=False,
              overrides=['policy.collect.acting_device=cpu', 'policy.random_collect_size=100'])
