"""MuZero end to end: the unroll pipeline through the CLI (uniform, prioritized, reanalyze) and an exact resume."""
import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from tidal import serial_pipeline, serial_pipeline_muzero
from tidal.entry.pipelines import resume, train
from tidal.entry.run import RunInterrupted
from tidal.worker.feeds.unroll import UnrollFeed
from tidal.base.errors import ConfigError
from tidal.base.nest import tree_leaves
from tidal.worker.checkpoint import load_checkpoint

ENVS, N_SAMPLE, UPDATES = 2, 16, 2
SHORT = [f'env.collector_env_num={ENVS}', f'policy.collect.n_sample={N_SAMPLE}', 'policy.learn.batch_size=16',
         f'policy.learn.update_per_collect={UPDATES}', 'policy.eval.evaluator.eval_freq=8',
         'env.n_evaluator_episode=1', 'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.search.num_simulations=4',
         'policy.model.hidden_sizes=[16]', 'policy.model.latent_size=8', 'policy.repr.num_unroll_steps=2',
         'policy.repr.td_steps=3', 'policy.learn.learner.save_ckpt_freq=4']


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, '-m', 'tidal', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize('extra', [
    [],
    ['policy.priority=false'],
    ['policy.repr.reanalyze_ratio=0.5', 'policy.repr.reanalyze_max_bootstrap_age=64', 'policy.repr.train_repr_prediction=true'],
])
def test_cli_trains_muzero_and_writes_the_run_folder(tmp_path, extra):
    sets = [arg for key in [*SHORT, *extra] for arg in ('--set', key)]
    result = run_cli('train', 'cartpole_muzero', '--max-env-step', '128', '--exp-name', 'run', '--no-progress', *sets,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = tmp_path / 'run'
    for name in ('config.yaml', 'evals.csv', 'summary.json', 'ckpt/latest.pt', 'ckpt/best.pt'):
        assert (run / name).is_file(), name
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['env_step'] == 128 and summary['train_iter'] == 128 // N_SAMPLE * UPDATES
    latest = load_checkpoint(run / 'ckpt' / 'latest.pt')
    assert int(latest['feed']['buffer']['current'].sum()) == 128  # every step is in the trajectory buffer
    evaluated = run_cli('eval', 'run/config.yaml', '--ckpt', 'run/ckpt/best.pt', '--episodes', '1', cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr


def train_muzero(tmp_path, name):
    overrides = [*SHORT, 'policy.repr.reanalyze_ratio=0.5', f'exp_name={tmp_path / name}']
    return train('cartpole_muzero', seed=3, max_env_step=96, progress=False, overrides=overrides)


def test_sigterm_stopped_muzero_run_resumes_to_identical_weights_and_replay(tmp_path, monkeypatch):
    whole = train_muzero(tmp_path, 'whole')
    original, calls = UnrollFeed.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # seen at the top of the loop, after this collection
        return original(self, env_budget)
    monkeypatch.setattr(UnrollFeed, 'step', step)
    with pytest.raises(RunInterrupted, match='SIGTERM at env step 48: checkpoint saved'):
        train_muzero(tmp_path, 'stopped')
    monkeypatch.undo()
    resumed = resume(tmp_path / 'stopped', progress=False)
    first = load_checkpoint(tmp_path / 'whole' / 'ckpt' / 'latest.pt')
    second = load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')
    for part in ('policy', 'feed'):
        left, right = ({path: leaf for path, leaf in tree_leaves(state[part]) if isinstance(leaf, torch.Tensor)}
                       for state in (first, second))
        assert left.keys() == right.keys() and left
        for key in left:
            assert torch.equal(left[key], right[key]), f'{part}{key} differs'
    for a, b in zip(whole.model.parameters(), resumed.model.parameters()):
        assert torch.equal(a, b)


def test_serial_pipeline_muzero_runs_from_python_and_the_off_policy_entry_refuses_muzero(tmp_path):
    policy = serial_pipeline_muzero('cartpole_muzero', seed=0, max_env_step=32, progress=False,
                                    overrides=[*SHORT, f'exp_name={tmp_path / "mz"}'])
    assert policy.cfg.type == 'muzero'
    assert json.loads((tmp_path / 'mz' / 'summary.json').read_text())['train_iter'] == 32 // N_SAMPLE * UPDATES
    with pytest.raises(ConfigError, match="policy 'muzero' learns from unrolled trajectories; train it with "
                                          "serial_pipeline_muzero"):
        serial_pipeline('cartpole_muzero', max_env_step=10, progress=False, overrides=[f'exp_name={tmp_path / "x"}'])
    with pytest.raises(ConfigError, match="policy 'sac' learns off-policy; train it with serial_pipeline "):
        serial_pipeline_muzero('pendulum_sac', max_env_step=10, progress=False,
                               overrides=[f'exp_name={tmp_path / "sac"}'])
