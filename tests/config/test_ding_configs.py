"""DI-engine zoo-style config files (tests/config/ding_configs) train unchanged for 200 env steps.

Each run is a subprocess of the CLI, as a user would start it; the files carry their own tiny settings.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DING_CONFIGS = Path(__file__).parent / 'ding_configs'
STEPS = 200

#: config file -> (exp_name it sets, module it needs)
RUNS = {
    'pendulum_sac_config.py': ('pendulum_sac_seed0', None),
    'cartpole_discrete_sac_config.py': ('cartpole_discrete_sac_seed0', None),
    'lunarlander_discrete_sac_config.py': ('lunarlander_discrete_sac_seed0', 'Box2D'),
    'lunarlander_cont_sac_config.py': ('lunarlander_cont_sac_seed0', 'Box2D'),
    'bipedalwalker_sac_config.py': ('bipedalwalker_sac_seed0', 'Box2D'),
    'hopper_sac_config.py': ('hopper_sac_seed0', 'mujoco'),
    'mountain_car_discrete_sac_config.py': ('mountain_car_discrete_sac_seed0', None),
    'cartpole_ppo_config.py': ('cartpole_ppo_seed0', None),
    'pendulum_ppo_config.py': ('pendulum_ppo_seed0', None),
    'acrobot_ppo_config.py': ('acrobot_ppo_seed0', None),
}


def tidal(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'tidal', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def assert_trained(run: subprocess.CompletedProcess, run_dir: Path) -> None:
    assert run.returncode == 0, run.stderr
    assert json.loads((run_dir / 'summary.json').read_text())['env_step'] == STEPS
    warnings = [line for line in run.stderr.splitlines() if line.startswith('tidal: warning: ')]
    assert warnings and len(warnings) == len(set(warnings))  # each DI-engine key said once
    assert not [line for line in run.stderr.splitlines() if 'tidal: error' in line or 'Traceback' in line]


@pytest.mark.parametrize('name', sorted(RUNS))
def test_ding_config_trains_unchanged(tmp_path, name):
    exp_name, needs = RUNS[name]
    if needs:
        pytest.importorskip(needs)
    run = tidal('train', str(DING_CONFIGS / name), '--max-env-step', str(STEPS), '--no-progress', cwd=tmp_path)
    assert_trained(run, tmp_path / exp_name)
    assert "runs as tidal's env type 'gym'" in run.stderr


def test_ding_command_form_runs_a_ding_config(tmp_path):
    run = tidal('-m', 'serial', '-c', str(DING_CONFIGS / 'pendulum_sac_cuda_config.py'), '-s', '0',
                '--env-step', str(STEPS), '--no-progress', cwd=tmp_path)
    assert_trained(run, tmp_path / 'pendulum_sac_cuda_seed0')
    assert "DI-engine key 'policy.cuda' (True) became 'policy.device' = 'auto'" in run.stderr


def test_ding_sqil_config_trains_on_recorded_demos(tmp_path):
    expert = tidal('train', str(DING_CONFIGS / 'pendulum_sac_config.py'), '--max-env-step', str(STEPS),
                   '--no-progress', cwd=tmp_path)
    assert expert.returncode == 0, expert.stderr
    demos = tidal('collect-demos', 'pendulum_sac_seed0/config.yaml', '--ckpt', 'pendulum_sac_seed0/ckpt/latest.pt',
                  '--episodes', '1', '-o', 'demos.npz', cwd=tmp_path)
    assert demos.returncode == 0, demos.stderr
    run = tidal('train', str(DING_CONFIGS / 'pendulum_sqil_sac_config.py'), '--max-env-step', str(STEPS),
                '--set', 'policy.expert_data_path=demos.npz', '--no-progress', cwd=tmp_path)
    assert_trained(run, tmp_path / 'pendulum_sqil_sac_seed0')
    assert "runs as tidal's policy type 'sqil_sac'" in run.stderr
    assert 'expert_td_error=' in (tmp_path / 'pendulum_sqil_sac_seed0' / 'log.txt').read_text()
