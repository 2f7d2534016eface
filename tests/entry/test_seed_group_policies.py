"""Each policy that joins seed groups, beyond PPO, PPG and SAC (tests/entry/test_seed_group.py): a grouped seed's
evaluations and final weights are its run alone, over a short run that makes updates and evaluates several times."""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
import torch

from tidal.entry.pipelines import train
from tidal.worker.checkpoint import load_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'policies'))  # the short runs of every policy
from test_devices import SHORT_RUNS, demos, short_run_overrides  # noqa: E402,F401  (demos: a fixture)

#: Policies whose group equivalence this file proves, each with its short run's settings (test_devices.SHORT_RUNS)
#: plus an evaluation every 50 env steps, so that a group's evaluations are compared more than once.
POLICIES = ['dqn', 'sql', 'sqil', 'td3', 'ddpg', 'a2c', 'taac', 'taac_l', 'taac_q']
DISCRETE = ('dqn', 'sql', 'sqil', 'a2c')
EVAL_EVERY = ['policy.eval.evaluator.eval_freq=1000000000', 'policy.eval.evaluator.eval_freq_env_steps=50']
SHORT_EPISODES = 'env.env_kwargs.max_episode_steps=30'  # Pendulum's evaluations, shortened


def eval_rows(run_dir: Path) -> list[tuple[str, str, str]]:
    with open(run_dir / 'evals.csv') as file:
        return [(row['env_step'], row['train_iter'], row['return_mean']) for row in csv.DictReader(file)]


@pytest.mark.parametrize('name', POLICIES)
def test_a_grouped_seed_is_its_run_alone(name, demos, tmp_path):
    config, steps, _ = SHORT_RUNS[name]
    extra = ['env.stop_value=null', 'seed_group.share=stacked', *EVAL_EVERY]  # stacked, whatever the update's size
    if config.startswith('pendulum'):
        # 50 updates after the warm-up of 100 env steps, evaluated every 25: the last bits in which stacked and
        # single products differ grow with the updates through Pendulum's dynamics
        steps, extra = 150, [*extra, SHORT_EPISODES, 'policy.eval.evaluator.eval_freq_env_steps=25']
    group = train(config, seeds=[0, 1], max_env_step=steps, progress=False,
                  overrides=short_run_overrides(name, demos, f'exp_name={tmp_path / "group"}', *extra))
    alone = train(config, seed=1, max_env_step=steps, progress=False,
                  overrides=short_run_overrides(name, demos, f'exp_name={tmp_path / "alone"}', *extra))
    grouped = group.runs[1].run_dir
    rows = eval_rows(grouped)
    assert len(rows) >= 3 and int(rows[-1][1]) > 0  # several evaluations, updates made
    alone_rows = eval_rows(alone.run_dir)
    assert [row[:2] for row in rows] == [row[:2] for row in alone_rows]
    # the stacked products round as batched products do: discrete actions come out the same and so do the returns;
    # continuous actions differ in their last bits, which Pendulum's dynamics grow (to ~1e-4 here)
    tol = 0.0 if name in DISCRETE else 1e-2
    assert [float(row[2]) for row in rows] == pytest.approx([float(row[2]) for row in alone_rows], rel=tol)
    mine, its = (load_checkpoint(run / 'ckpt' / 'latest.pt')['policy']['model'] for run in (grouped, alone.run_dir))
    assert mine.keys() == its.keys()
    for key in mine:
        assert torch.allclose(mine[key], its[key], atol=1e-5 if name in DISCRETE else 1e-3, rtol=0), \
            (key, (mine[key] - its[key]).abs().max())
    assert eval_rows(group.runs[0].run_dir) != rows  # seed 0 is another run


@pytest.mark.parametrize('name', ['bc', 'td3_bc', 'iql', 'cql', 'rebrac', 'discrete_cql'])
def test_a_grouped_offline_seed_is_its_run_alone(name, demos, tmp_path):
    """Stacked offline seeds: each seed's batches from its own sampler, its own dataset statistics, its updates
    made together with the other seed's."""
    config, steps, _ = SHORT_RUNS[name]
    extra = ['env.stop_value=null', 'seed_group.share=stacked', 'policy.eval.evaluator.eval_freq=10', SHORT_EPISODES]
    group = train(config, seeds=[0, 1], max_train_iter=30, progress=False,
                  overrides=short_run_overrides(name, demos, f'exp_name={tmp_path / "group"}', *extra))
    alone = train(config, seed=1, max_train_iter=30, progress=False,
                  overrides=short_run_overrides(name, demos, f'exp_name={tmp_path / "alone"}', *extra))
    rows, alone_rows = eval_rows(group.runs[1].run_dir), eval_rows(alone.run_dir)
    assert [row[:2] for row in rows] == [row[:2] for row in alone_rows] == [('0', str(i)) for i in (0, 10, 20, 30)]
    assert [float(row[2]) for row in rows] == pytest.approx([float(row[2]) for row in alone_rows], rel=1e-2)
    mine, its = (load_checkpoint(run / 'ckpt' / 'latest.pt')['policy'] for run in (group.runs[1].run_dir, alone.run_dir))
    for key in mine['model']:
        assert torch.allclose(mine['model'][key], its['model'][key], atol=1e-4, rtol=0), key
    if 'obs_rms' in its:
        assert torch.equal(mine['obs_rms']['mean'], its['obs_rms']['mean'])
