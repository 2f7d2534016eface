"""DI-engine's command form, `tidal -m MODE -c FILE -s SEED`, and the serial entry points refusing the wrong policies."""
import json
import subprocess
import sys

import pytest
import yaml

from tidal import serial_pipeline
from tidal.base.errors import ConfigError
from tidal.entry.cli import main as tidal_main

PPO_CONFIG = '''
main_config = dict(
    exp_name='ding_ppo',
    env=dict(env_id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1),
    policy=dict(model=dict(encoder_hidden_sizes=[16]), learn=dict(batch_size=32, epoch_per_collect=1),
                collect=dict(n_sample=64), eval=dict(evaluator=dict(eval_freq=4))),
)
create_config = dict(env=dict(type='gym'), env_manager=dict(type='base'), policy=dict(type='ppo'))
'''


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, '-m', 'tidal', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_ding_form_runs_the_named_serial_entry_with_the_seed_and_budget(tmp_path):
    (tmp_path / 'cartpole_ppo_config.py').write_text(PPO_CONFIG)
    result = run_cli('-m', 'serial_onpolicy', '-c', 'cartpole_ppo_config.py', '-s', '7', '--env-step', '128',
                     '--no-progress', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = tmp_path / 'ding_ppo'
    assert json.loads((run / 'summary.json').read_text())['env_step'] == 128
    assert yaml.safe_load((run / 'config.yaml').read_text())['main_config']['seed'] == 7


def test_ding_form_takes_set_overrides(tmp_path):
    (tmp_path / 'cartpole_ppo_config.py').write_text(PPO_CONFIG)
    result = run_cli('-m', 'serial_onpolicy', '-c', 'cartpole_ppo_config.py', '--env-step', '128', '--no-progress',
                     '--set', 'exp_name=renamed', '--set', 'policy.learn.batch_size=32', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    saved = yaml.safe_load((tmp_path / 'renamed' / 'config.yaml').read_text())['main_config']
    assert saved['policy']['learn']['batch_size'] == 32


@pytest.mark.parametrize('args, message', [
    (['-m', 'parallel', '-c', 'x.py'], "argument -m/--mode: invalid choice: 'parallel' (choose from 'serial', "
                                       "'serial_bc', 'serial_offline', 'serial_onpolicy', 'serial_sqil')"),
    (['-m', 'serial'], 'the following arguments are required: -c/--config'),
    (['-m', 'serial', '-c', 'cartpole_ppo_config.py'], "policy 'ppo' learns on-policy; train it with "
                                                       'tidal -m serial_onpolicy (or tidal train, which picks '
                                                       'the pipeline itself)'),
])
def test_ding_form_errors_are_one_line(tmp_path, args, message):
    (tmp_path / 'cartpole_ppo_config.py').write_text(PPO_CONFIG)
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_ding_form_takes_import_of_a_users_policy(tmp_path):
    (tmp_path / 'my_ppo.py').write_text("from tidal import POLICY_REGISTRY\nfrom tidal.policies import PPOPolicy\n\n\n"
                                        "@POLICY_REGISTRY.register('my_ppo')\nclass MyPPO(PPOPolicy):\n"
                                        "    \"\"\"PPO under a name of the user's own.\"\"\"\n")
    (tmp_path / 'my_ppo_config.py').write_text(PPO_CONFIG.replace("type='ppo'", "type='my_ppo'"))
    result = run_cli('-m', 'serial_onpolicy', '-c', 'my_ppo_config.py', '--import', './my_ppo.py', '--env-step', '128',
                     '--no-progress', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load((tmp_path / 'ding_ppo' / 'config.yaml').read_text())['create_config']['policy']['type'] == \
        'my_ppo'


def test_help_lists_the_ding_form(capsys):
    assert tidal_main(['--help']) == 0
    assert ("DI-engine's command form, for its config files: tidal -m {serial,serial_bc,serial_offline,serial_onpolicy,"
            "serial_sqil} -c CONFIG [-s SEED]") in ' '.join(capsys.readouterr().out.split())


@pytest.mark.parametrize('config, message', [
    ('pendulum_sqil_sac', "policy 'sqil_sac' learns from demonstrations; train it with serial_pipeline_sqil"),
    ('cartpole_ppg', "policy 'ppg' learns on-policy; train it with serial_pipeline_onpolicy"),
])
def test_serial_pipeline_refuses_policies_of_other_pipelines(tmp_path, config, message):
    with pytest.raises(ConfigError, match=message):
        serial_pipeline(config, max_env_step=10, progress=False, overrides=[f'exp_name={tmp_path / "x"}'])
    assert not (tmp_path / 'x').exists()
