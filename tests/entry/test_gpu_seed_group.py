"""A seed group on the GPU: stacked updates and stacked acting on CUDA, each seed still its run alone at first."""
from __future__ import annotations

import csv

import pytest

from tidal.entry.pipelines import train

pytestmark = pytest.mark.gpu


def first_return(run_dir):
    with open(run_dir / 'evals.csv') as file:
        return float(next(csv.DictReader(file))['return_mean'])


@pytest.mark.parametrize('config, steps, extra', [
    ('cartpole_ppo', 1024, []),
    ('pendulum_sac', 400, ['policy.random_collect_size=200', 'env.n_evaluator_episode=1',
                           'env.env_kwargs.max_episode_steps=50']),
])
def test_a_seed_group_trains_on_the_gpu_as_its_seeds_alone(config, steps, extra, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    overrides = ['policy.device=cuda', *extra]
    group = train(config, seeds=[0, 1], max_env_step=steps, progress=False, overrides=[*overrides, 'exp_name=g'])
    alone = train(config, seed=1, max_env_step=steps, progress=False, overrides=[*overrides, 'exp_name=a'])
    assert [run.run_dir.name for run in group.runs] == ['seed_0', 'seed_1']
    # the first evaluation (before any update) acts with the same weights: the same return, to float rounding
    assert first_return(tmp_path / 'g' / 'seed_1') == pytest.approx(first_return(alone.run_dir), rel=1e-6)
