"""The multi-agent zoo configs train end to end from the CLI."""
import csv
import subprocess
import sys

import pytest

pytest.importorskip('mpe2')


@pytest.mark.parametrize('config', ['mpe_spread_discrete_sac', 'mpe_spread_sac'])
def test_multi_agent_zoo_config_trains_200_steps(tmp_path, config):
    result = subprocess.run(
        [sys.executable, '-m', 'tidal', 'train', config, '--max-env-step', '200', '--exp-name', 'run', '--no-progress',
         '--set', 'policy.random_collect_size=100', '--set', 'policy.collect.n_sample=50',
         '--set', 'policy.learn.batch_size=32', '--set', 'policy.eval.evaluator.eval_freq=10'],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert 'budget of 200 env steps reached' in result.stdout
    with open(tmp_path / 'run' / 'evals.csv') as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 2 and all(float(row['return_mean']) < 0 for row in rows)
