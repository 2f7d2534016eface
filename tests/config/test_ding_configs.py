"""DI-engine zoo-style config files (tests/config/ding_configs) run unchanged through DI-engine's command form.

The files are whole, as a DI-engine user writes them (dizoo import names, torch modules, `__main__` blocks
that import ding.entry); the command's budget keeps each run short: the config's own random warm-up, then
STEPS env steps. MuJoCo and Box2D configs, whose evaluations of 1000-step episodes would cost more than the
training, run as `tidal train FILE` with one evaluation episode set on the command line (Atari's also with its
games cut short). Runs go through
the CLI's `main` in this process (a subprocess per run would spend more time importing torch than
training); one test runs the command in a subprocess as a user would.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tidal.config import read_config
from tidal.entry.cli import main as tidal_main

DING_CONFIGS = Path(__file__).parent / 'ding_configs'
STEPS = 200

#: config file -> (DI-engine mode, module it needs, policy type tidal runs)
RUNS = {
    'pendulum_sac_config.py': ('serial', None, 'sac'),
    'lunarlander_cont_sac_config.py': ('serial', 'Box2D', 'sac'),
    'bipedalwalker_sac_config.py': ('serial', 'Box2D', 'sac'),
    'hopper_sac_config.py': ('serial', 'mujoco', 'sac'),
    'halfcheetah_sac_config.py': ('serial', 'mujoco', 'sac'),
    'walker2d_sac_config.py': ('serial', 'mujoco', 'sac'),
    'cartpole_discrete_sac_config.py': ('serial', None, 'discrete_sac'),
    'cartpole_dqn_config.py': ('serial', None, 'dqn'),
    'lunarlander_dqn_config.py': ('serial', 'Box2D', 'dqn'),
    'pong_dqn_config.py': ('serial', 'ale_py', 'dqn'),
    'cartpole_sql_config.py': ('serial', None, 'sql'),
    'lunarlander_sql_config.py': ('serial', 'Box2D', 'sql'),
    'pendulum_td3_config.py': ('serial', None, 'td3'),
    'pendulum_ddpg_config.py': ('serial', None, 'ddpg'),
    'hopper_td3_config.py': ('serial', 'mujoco', 'td3'),
    'halfcheetah_td3_config.py': ('serial', 'mujoco', 'td3'),
    'lunarlander_discrete_sac_config.py': ('serial', 'Box2D', 'discrete_sac'),
    'mountain_car_discrete_sac_config.py': ('serial', None, 'discrete_sac'),
    'acrobot_discrete_sac_config.py': ('serial', None, 'discrete_sac'),
    'ptz_simple_spread_masac_config.py': ('serial', 'mpe2', 'discrete_sac'),
    'ptz_simple_spread_masac_continuous_config.py': ('serial', 'mpe2', 'sac'),
    'cartpole_ppo_config.py': ('serial_onpolicy', None, 'ppo'),
    'pendulum_ppo_config.py': ('serial_onpolicy', None, 'ppo'),
    'acrobot_ppo_config.py': ('serial_onpolicy', None, 'ppo'),
    'mountain_car_ppo_config.py': ('serial_onpolicy', None, 'ppo'),
    'lunarlander_ppo_config.py': ('serial_onpolicy', 'Box2D', 'ppo'),
    'bipedalwalker_ppo_config.py': ('serial_onpolicy', 'Box2D', 'ppo'),
    'hopper_onppo_config.py': ('serial_onpolicy', 'mujoco', 'ppo'),
    'halfcheetah_onppo_config.py': ('serial_onpolicy', 'mujoco', 'ppo'),
    'walker2d_onppo_config.py': ('serial_onpolicy', 'mujoco', 'ppo'),
    'cartpole_ppg_config.py': ('serial_onpolicy', None, 'ppg'),
    'acrobot_ppg_config.py': ('serial_onpolicy', None, 'ppg'),
    'pendulum_ppg_config.py': ('serial_onpolicy', None, 'ppg'),
    'pong_ppo_config.py': ('serial_onpolicy', 'ale_py', 'ppo'),
    'cartpole_a2c_config.py': ('serial_onpolicy', None, 'a2c'),
    'lunarlander_a2c_config.py': ('serial_onpolicy', 'Box2D', 'a2c'),
    'pong_sql_config.py': ('serial', 'ale_py', 'sql'),
}
#: SQIL config -> the expert config whose run records its demonstrations
SQIL_RUNS = {'pendulum_sqil_sac_config.py': 'pendulum_sac_config.py',
             'hopper_sqil_sac_config.py': 'hopper_sac_config.py'}
#: discrete SQIL config (DI-engine's 'sql' under its SQIL entry) -> the config whose run is its expert checkpoint
SQIL_SQL_RUNS = {'cartpole_sqil_config.py': 'cartpole_dqn_config.py',
                 'lunarlander_sqil_config.py': 'lunarlander_sql_config.py'}
#: config file -> the start of its one-line refusal
REFUSED = {
    'cartpole_ppg_offpolicy_config.py': "tidal: error: DI-engine policy type 'ppg_offpolicy' is not supported: "
                                        "DI-engine's off-policy PPG replays the policy phase from a buffer; tidal's "
                                        "PPG is on-policy: set create_config.policy.type='ppg' and run it with "
                                        "tidal -m serial_onpolicy",
}


SMALL_EVAL = ('--set', 'env.evaluator_env_num=1', '--set', 'env.n_evaluator_episode=1')


def budget(name: str) -> int:
    """The config's random warm-up (which the run needs before its first update) and STEPS more."""
    main_config, _ = read_config(str(DING_CONFIGS / name))
    return main_config['policy'].get('random_collect_size', 0) + STEPS


def run_cli(*args: str) -> tuple[int, list[str]]:
    """(exit code, stderr lines) of `tidal ARGS`, run in this process."""
    with pytest.MonkeyPatch.context() as patch:
        captured: list[str] = []
        patch.setattr(sys, 'stderr', _Lines(captured))
        code = tidal_main(list(args))
    return code, ''.join(captured).splitlines()


class _Lines:
    """A stderr that keeps what is written (the CLI's own error and summary lines)."""

    def __init__(self, sink: list[str]) -> None:
        self.sink = sink

    def write(self, text: str) -> int:
        self.sink.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Runs each config once on first use: {config file: (run folder, stderr lines)}."""
    folder = tmp_path_factory.mktemp('ding_runs')
    done: dict[str, tuple[Path, list[str]]] = {}

    def run(name: str) -> tuple[Path, list[str]]:
        if name not in done:
            mode, needs, _ = RUNS[name]
            if needs:
                pytest.importorskip(needs)
            if needs in ('mujoco', 'Box2D'):
                command = ['train', str(DING_CONFIGS / name), '--max-env-step', str(budget(name)), *SMALL_EVAL]
            elif needs == 'ale_py':  # whole Pong games would outlast the training: cut them at 1000 frames
                command = ['train', str(DING_CONFIGS / name), '--max-env-step', str(budget(name)), *SMALL_EVAL,
                           '--set', 'env.env_kwargs.max_num_frames_per_episode=1000']
            else:
                command = ['-m', mode, '-c', str(DING_CONFIGS / name), '-s', '0', '--env-step', str(budget(name))]
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(folder)
                code, lines = run_cli(*command, '--no-progress')
            assert code == 0, '\n'.join(lines)
            exp_name = read_config(str(DING_CONFIGS / name))[0]['exp_name']
            done[name] = (folder / exp_name, lines)
        return done[name]
    return run


#: configs whose env type tidal has under the same name (which reads DI-engine's keys): their table notes the
#: env's keys it changed instead of the env type
ENV_LINES = {'pong_ppo_config.py': 'policy.model.obs_shape = [4, 84, 84]',
             'pong_sql_config.py': 'policy.model.obs_shape = [4, 84, 84]',
             'pong_dqn_config.py': 'policy.model.obs_shape = [4, 84, 84]'}


def assert_ran_with_one_summary_line(run_dir: Path, lines: list[str], steps: int, policy_type: str,
                                     env_line: str = 'env.type = ') -> None:
    assert json.loads((run_dir / 'summary.json').read_text())['env_step'] >= steps
    summary = [line for line in lines if 'DI-engine key' in line]
    assert len(summary) == 1 and summary[0].endswith(f"see {run_dir.name}/ding_mapping.txt"), lines
    assert not [line for line in lines if 'warning' in line or 'Traceback' in line or 'error' in line]
    table = (run_dir / 'ding_mapping.txt').read_text()
    assert f"(policy type '{policy_type}')" in table and env_line in table


@pytest.mark.parametrize('name', sorted(RUNS))
def test_ding_config_runs_unchanged(runs, name):
    run_dir, lines = runs(name)
    assert_ran_with_one_summary_line(run_dir, lines, budget(name), RUNS[name][2], ENV_LINES.get(name, 'env.type = '))
    saved = (run_dir / 'config.yaml').read_text()
    assert 'Tanh()' not in saved and 'dizoo' not in saved  # plain names and no DI-engine modules


def test_ppo_critic_wider_than_actor_keeps_its_layout(runs):
    run_dir, _ = runs('hopper_onppo_config.py')
    saved = read_config(str(run_dir / 'config.yaml'))[0]['policy']['model']
    assert (saved['encoder_hidden_sizes'], saved['value_encoder_hidden_sizes'], saved['activation']) == \
        ([64, 64], [64, 64, 128, 128], 'tanh')


def test_ding_mpe_runs_as_mpe2_with_the_team_reward(runs):
    run_dir, _ = runs('ptz_simple_spread_masac_config.py')
    env = read_config(str(run_dir / 'config.yaml'))[0]['env']
    assert (env['env_id'], env['env_kwargs'], env['team_reward'], env['reward_scale']) == \
        ('mpe2.simple_spread_v3', {'N': 3, 'max_cycles': 25, 'continuous_actions': False}, True, 2.0)


@pytest.mark.parametrize('name', sorted(SQIL_RUNS))
def test_ding_sqil_config_trains_on_recorded_demos(runs, tmp_path, name):
    expert_dir, _ = runs(SQIL_RUNS[name])
    demos = tmp_path / 'demos.npz'
    code, lines = run_cli('collect-demos', str(expert_dir / 'config.yaml'), '--ckpt',
                          str(expert_dir / 'ckpt' / 'latest.pt'), '--episodes', '1', '-o', str(demos))
    assert code == 0, lines
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        code, lines = run_cli('train', str(DING_CONFIGS / name), '--max-env-step', str(budget(name)), *SMALL_EVAL,
                              '--set', f'policy.expert_data_path={demos}', '--set', 'policy.learn.learner.log_freq=10',
                              '--no-progress')
    assert code == 0, lines
    run_dir = tmp_path / read_config(str(DING_CONFIGS / name))[0]['exp_name']
    assert_ran_with_one_summary_line(run_dir, lines, budget(name), 'sqil_sac')
    assert 'expert_td_error=' in (run_dir / 'log.txt').read_text()


def sqil_command(name: str, *model_path: str) -> list[str]:
    """DI-engine's command form for a discrete SQIL file (Box2D's as `tidal train`, with one evaluation episode),
    with `policy.collect.model_path` set on the command line when given."""
    given = [arg for path in model_path for arg in ('--set', f'policy.collect.model_path={path}')]
    if 'lunarlander' in name:
        return ['train', str(DING_CONFIGS / name), '--max-env-step', str(budget(name)), *SMALL_EVAL, *given]
    return ['-m', 'serial_sqil', '-c', str(DING_CONFIGS / name), '-s', '0', '--env-step', str(budget(name)), *given]


@pytest.mark.parametrize('name', sorted(SQIL_SQL_RUNS))
def test_ding_discrete_sqil_config_records_its_demos_from_the_tidal_checkpoint_at_model_path(runs, tmp_path, capsys,
                                                                                           name):
    if 'lunarlander' in name:
        pytest.importorskip('Box2D')
    expert_dir, _ = runs(SQIL_SQL_RUNS[name])
    ckpt = expert_dir / 'ckpt' / 'latest.pt'
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        code, lines = run_cli(*sqil_command(name, str(ckpt)), '--set', 'policy.collect.expert_episodes=2',
                              '--set', 'policy.learn.learner.log_freq=10', '--no-progress')
    assert code == 0, lines
    assert f"tidal: recorded 2 expert episodes from '{ckpt}' (policy.collect.model_path)" in capsys.readouterr().out
    run_dir = tmp_path / read_config(str(DING_CONFIGS / name))[0]['exp_name']
    assert_ran_with_one_summary_line(run_dir, lines, budget(name), 'sqil')
    assert "create_config.policy.type = 'sql'\n      -> 'sqil'" in (run_dir / 'ding_mapping.txt').read_text()
    assert 'expert_td_error=' in (run_dir / 'log.txt').read_text()


@pytest.mark.parametrize('model_path, error', [
    ('', "tidal: error: policy 'sqil' learns from demonstrations: set policy.expert_data_path (record them with tidal "
         "collect-demos) or policy.collect.model_path (an expert's checkpoint to record them from)"),
    (None, "tidal: error: policy.collect.model_path: 'cartpole_dqn_seed0/ckpt/eval.pth.tar' is neither a run folder "
           "nor a checkpoint file"),  # the file's own path, of DI-engine's checkpoint
])
def test_ding_discrete_sqil_config_without_a_tidal_expert_is_refused_in_one_line(tmp_path, monkeypatch, model_path,
                                                                                  error):
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli(*sqil_command('cartpole_sqil_config.py', *([] if model_path is None else [model_path])),
                          '--no-progress')
    assert code == 2 and lines[-1] == error, lines
    assert list(tmp_path.iterdir()) == []  # the run folder made for it is gone


@pytest.mark.parametrize('name', sorted(REFUSED))
def test_ding_config_tidal_lacks_is_refused_in_one_line(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    code, lines = run_cli('-m', 'serial_onpolicy', '-c', str(DING_CONFIGS / name), '-s', '0', '--env-step', '300')
    assert code != 0 and len(lines) == 1 and lines[0].startswith(REFUSED[name]), lines
    assert list(tmp_path.iterdir()) == []


def test_ding_command_form_in_a_subprocess(tmp_path):
    """As a user types it; stderr holds one summary line."""
    run = subprocess.run([sys.executable, '-m', 'tidal', '-m', 'serial_onpolicy', '-c',
                          str(DING_CONFIGS / 'cartpole_ppo_config.py'), '-s', '0', '--env-step', str(STEPS),
                          '--no-progress'], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert_ran_with_one_summary_line(tmp_path / 'cartpole_ppo_seed0', run.stderr.splitlines(), STEPS, 'ppo')
