"""The on-policy pipeline end to end: PPO and PPG through the CLI and from Python, and an exact PPG resume."""
import json
import math
import os
import signal
import subprocess
import sys

import pytest
import torch

from tidal import serial_pipeline_onpolicy
from tidal.base.nest import tree_leaves
from tidal.config import resolve_config_source
from tidal.entry.pipelines import resume
from tidal.worker.feeds.ppg import AuxPhaseFeed
from tidal.entry.run import RunInterrupted
from tidal.base.errors import ConfigError, PolicyError
from tidal.policies.ppo import PPOPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.worker.checkpoint import load_checkpoint

ENVS, N_SAMPLE, BATCH, EPOCHS = 2, 64, 32, 2
SHORT = [f'env.collector_env_num={ENVS}', f'policy.collect.n_sample={N_SAMPLE}', f'policy.learn.batch_size={BATCH}',
         f'policy.learn.epoch_per_collect={EPOCHS}', 'policy.eval.evaluator.eval_freq=8', 'env.n_evaluator_episode=1',
         'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[16]']
UPDATES_PER_ROLLOUT = EPOCHS * math.ceil(N_SAMPLE / BATCH)


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, '-m', 'tidal', *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize('config, extra', [
    ('cartpole_ppo', []),
    ('cartpole_ppg', ['policy.aux.interval=2', 'policy.aux.mini_batch_size=2']),
    ('pendulum_ppo', []),
])
def test_cli_trains_on_policy_configs_and_writes_the_run_folder(tmp_path, config, extra):
    sets = [arg for key in [*SHORT, *extra] for arg in ('--set', key)]
    result = run_cli('train', config, '--max-env-step', '256', '--exp-name', 'run', '--no-progress', *sets,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = tmp_path / 'run'
    for name in ('config.yaml', 'evals.csv', 'summary.json', 'ckpt/latest.pt', 'ckpt/best.pt'):
        assert (run / name).is_file(), name
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['env_step'] == 256 and summary['train_iter'] == 256 // N_SAMPLE * UPDATES_PER_ROLLOUT
    if config == 'cartpole_ppg':
        assert load_checkpoint(run / 'ckpt' / 'latest.pt')['feed']['aux_buffer']['size'] == 0  # 4 rollouts, 2 phases
    if config == 'pendulum_ppo':  # the observation statistics are in the checkpoint and used by tidal eval
        latest = load_checkpoint(run / 'ckpt' / 'latest.pt')['policy']
        assert float(latest['obs_rms']['count']) == pytest.approx(256 + 1e-4)  # every collected obs, once
        assert 'obs_rms' in load_checkpoint(run / 'ckpt' / 'best.pt')['policy']
        evaluated = run_cli('eval', 'run/config.yaml', '--ckpt', 'run/ckpt/best.pt', '--episodes', '1', cwd=tmp_path)
        assert evaluated.returncode == 0, evaluated.stderr
        assert 'eval return' in evaluated.stdout


def test_serial_pipeline_onpolicy_runs_from_a_config_pair(tmp_path):
    main_config, create_config = resolve_config_source('cartpole_ppo')
    main_config['exp_name'] = str(tmp_path / 'pair')
    policy = serial_pipeline_onpolicy((main_config, create_config), seed=0, max_env_step=128, progress=False,
                                      overrides=SHORT)
    assert policy.cfg.type == 'ppo' and policy.cfg.collect.n_sample == N_SAMPLE
    summary = json.loads((tmp_path / 'pair' / 'summary.json').read_text())
    assert summary['env_step'] == 128 and summary['train_iter'] == 2 * UPDATES_PER_ROLLOUT


def test_a_run_without_gradient_clipping_trains(tmp_path):
    overrides = [*SHORT, 'policy.learn.grad_clip_norm=null', f'exp_name={tmp_path / "run"}']
    policy = serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=128, progress=False, overrides=overrides)
    assert policy.cfg.learn.grad_clip_norm is None
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['train_iter'] == 2 * UPDATES_PER_ROLLOUT


@POLICY_REGISTRY.register('test_grid_advantage_ppo', force=True)
class GridAdvantagePPO(PPOPolicy):
    """A user's PPO that leaves its advantages as the [steps, envs] grid GAE computes them on."""

    def _get_train_sample(self, transitions, layout):
        sample = super()._get_train_sample(transitions, layout)
        sample['advantage'] = sample['advantage'].reshape(layout.steps, layout.num_envs)
        return sample


def test_a_sample_column_of_the_wrong_shape_stops_the_run_naming_it(tmp_path):
    main_config, create_config = resolve_config_source('cartpole_ppo')
    create_config['policy']['type'] = 'test_grid_advantage_ppo'
    main_config['exp_name'] = str(tmp_path / 'grid')
    with pytest.raises(PolicyError) as err:
        serial_pipeline_onpolicy((main_config, create_config), max_env_step=128, progress=False, overrides=SHORT)
    assert str(err.value) == ("policy 'test_grid_advantage_ppo': _get_train_sample returned column 'advantage' with "
                              "shape [32, 2], expected 64 rows (32 steps of 2 envs, step-major: env i's step k is "
                              "row k * 2 + i)")


@POLICY_REGISTRY.register('test_extra_stat_ppo', force=True)
class ExtraStatPPO(PPOPolicy):
    """A user's PPO that returns a value it does not list in _monitor_vars_learn, and with `lists_missing` lists one
    it never returns."""

    config = dict(
        # (bool) List a name that no update returns.
        lists_missing=False,
    )

    def _forward_learn(self, batch):
        return {**super()._forward_learn(batch), 'advantage_mean': batch['advantage'].mean()}

    def _monitor_vars_learn(self):
        return super()._monitor_vars_learn() + (['value_error'] if self._cfg.lists_missing else [])


def extra_stat_run(tmp_path, *overrides):
    main_config, create_config = resolve_config_source('cartpole_ppo')
    create_config['policy']['type'] = 'test_extra_stat_ppo'
    main_config['exp_name'] = str(tmp_path / 'extra')
    return serial_pipeline_onpolicy((main_config, create_config), max_env_step=128, progress=False,
                                    overrides=[*SHORT, 'policy.learn.learner.log_freq=1', *overrides])


def test_a_value_the_update_returns_but_does_not_list_is_logged(tmp_path):
    extra_stat_run(tmp_path)
    train_lines = [line for line in (tmp_path / 'extra' / 'log.txt').read_text().splitlines() if '] train @' in line]
    assert len(train_lines) == 2 * UPDATES_PER_ROLLOUT
    assert all('policy_loss=' in line and 'advantage_mean=' in line for line in train_lines)


def test_a_listed_name_no_update_returns_stops_the_run_at_the_first_update(tmp_path):
    with pytest.raises(PolicyError) as err:
        extra_stat_run(tmp_path, 'policy.lists_missing=true')
    assert str(err.value).startswith("policy 'test_extra_stat_ppo': _monitor_vars_learn lists 'value_error', which "
                                     "its first update did not return (it returned ")


def test_serial_pipeline_onpolicy_refuses_an_off_policy_config(tmp_path):
    with pytest.raises(ConfigError, match="policy 'sac' learns off-policy; train it with serial_pipeline"):
        serial_pipeline_onpolicy('pendulum_sac', max_env_step=10, progress=False,
                                 overrides=[f'exp_name={tmp_path / "sac"}'])
    assert not (tmp_path / 'sac').exists()


# ----- exact resume of a PPG run ---------------------------------------------------------------
# rollouts of 16 env steps, an aux phase every 3 rollouts (after 48, 96, 144); stopped after 80 env steps,
# with 2 rollouts in the aux buffer, the resumed run runs the phases at 96 and 144
PPG_SHORT = [f'env.collector_env_num={ENVS}', 'policy.collect.n_sample=16', 'policy.learn.batch_size=8',
             'policy.learn.epoch_per_collect=2', 'policy.aux.interval=3', 'policy.aux.mini_batch_size=2',
             'policy.aux.mini_batch_length=4', 'policy.aux.num_updates_per_train_iter=2',
             'policy.eval.evaluator.eval_freq=12', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
             'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[16]', 'policy.learn.learner.save_ckpt_freq=20']
PPG_STEPS = 160


def train_ppg(tmp_path, name):
    return serial_pipeline_onpolicy('cartpole_ppg', seed=1, max_env_step=PPG_STEPS, progress=False,
                                    overrides=[*PPG_SHORT, f'exp_name={tmp_path / name}'])


def test_sigterm_stopped_ppg_run_resumes_to_identical_weights(tmp_path, monkeypatch):
    whole = train_ppg(tmp_path, 'whole')
    original, calls, phases = AuxPhaseFeed.step, [], []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == 5:
            os.kill(os.getpid(), signal.SIGTERM)  # seen at the top of the loop, after this rollout
        return original(self, env_budget)
    monkeypatch.setattr(AuxPhaseFeed, 'step', step)
    with pytest.raises(RunInterrupted, match='SIGTERM at env step 80: checkpoint saved'):
        train_ppg(tmp_path, 'stopped')
    monkeypatch.undo()
    stopped = load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')
    assert stopped['collector']['env_step'] == 80
    assert stopped['feed']['aux_buffer']['size'] == 2 * 16  # the aux phase at 96 needs these rows

    aux_phase = AuxPhaseFeed.aux_phase

    def counted_aux_phase(self):
        phases.append(self.collector.env_step)
        return aux_phase(self)
    monkeypatch.setattr(AuxPhaseFeed, 'aux_phase', counted_aux_phase)
    resumed = resume(tmp_path / 'stopped', progress=False)
    assert phases == [96, 144]

    first = load_checkpoint(tmp_path / 'whole' / 'ckpt' / 'latest.pt')
    second = load_checkpoint(tmp_path / 'stopped' / 'ckpt' / 'latest.pt')
    for part in ('policy', 'feed'):
        left, right = ({path: leaf for path, leaf in tree_leaves(state[part]) if isinstance(leaf, torch.Tensor)}
                       for state in (first, second))
        assert left.keys() == right.keys() and left
        for key in left:
            assert torch.equal(left[key], right[key]), f'{part}{key} differs'
    assert first['train_iter'] == second['train_iter']
    for a, b in zip(whole.model.parameters(), resumed.model.parameters()):
        assert torch.equal(a, b)
    assert (tmp_path / 'whole' / 'evals.csv').read_text().count('\n') == \
        (tmp_path / 'stopped' / 'evals.csv').read_text().count('\n')


@pytest.mark.parametrize('override, key', [
    ('policy.random_collect_size=100', 'policy.random_collect_size'),
    ('policy.priority=true', 'policy.priority'),
    ('policy.collect.unroll_len=4', 'policy.collect.unroll_len'),
    ('policy.learn.update_per_collect=4', 'policy.learn.update_per_collect'),
])
def test_off_policy_keys_are_refused_by_name_and_leave_no_run_folder(override, key, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f'^{key}: .ppo. learns on-policy'):
        serial_pipeline_onpolicy('cartpole_ppo', max_env_step=100, overrides=[override], progress=False)
    assert not any(tmp_path.iterdir())
