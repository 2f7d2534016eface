"""Evaluations, logs and checkpoints are due by train iterations or by env steps, whichever comes first:
a policy that makes one update per collection is still evaluated and logged regularly."""
from __future__ import annotations

import csv

import pytest
import torch

from tidal import serial_pipeline, serial_pipeline_onpolicy
from tidal.config import compile_config, resolve_config_source
from tidal.worker.learner import Period

ROLLOUT = 64  # env steps per collection, each followed by exactly one update
ONE_UPDATE_PER_ROLLOUT = [
    f'policy.collect.n_sample={ROLLOUT}', f'policy.learn.batch_size={ROLLOUT}', 'policy.learn.epoch_per_collect=1',
    'policy.model.encoder_hidden_sizes=[16]', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
    'env.stop_value=null',
    # by iterations alone, 1000 rollouts apart: never within these runs
    'policy.eval.evaluator.eval_freq=1000', 'policy.learn.learner.log_freq=1000',
    'policy.learn.learner.save_ckpt_freq=1000']


def eval_env_steps(run):
    with open(run / 'evals.csv') as f:
        return [int(row['env_step']) for row in csv.DictReader(f)]


def train_log_env_steps(run):
    lines = (run / 'log.txt').read_text().splitlines()
    return [int(line.split('train @ env step ', 1)[1].split(',', 1)[0]) for line in lines if 'train @ env step' in line]


def test_one_update_per_rollout_is_evaluated_every_n_env_steps(tmp_path):
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=1024, progress=False, overrides=[
        *ONE_UPDATE_PER_ROLLOUT, 'policy.eval.evaluator.eval_freq_env_steps=256', f'exp_name={tmp_path / "run"}'])
    assert eval_env_steps(tmp_path / 'run') == [0, 256, 512, 768, 1024]


def test_one_update_per_rollout_is_logged_every_n_env_steps(tmp_path):
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=1024, progress=False, overrides=[
        *ONE_UPDATE_PER_ROLLOUT, 'policy.learn.learner.log_freq_env_steps=128', f'exp_name={tmp_path / "run"}'])
    # counted from the first update, after the first rollout
    assert train_log_env_steps(tmp_path / 'run') == list(range(ROLLOUT + 128, 1024 + 1, 128))


def test_a_policy_that_sets_nothing_is_evaluated_and_logged_every_5000_env_steps():
    main_config, create_config = resolve_config_source('cartpole_ppo')
    cfg = compile_config(main_config, create_config, seed=0)
    assert cfg.policy.eval.evaluator.eval_freq_env_steps == 5000
    assert cfg.policy.learn.learner.log_freq_env_steps == 5000


def test_taac_whose_evaluation_draws_random_numbers_is_evaluated_by_iterations_only():
    main_config, create_config = resolve_config_source('pendulum_taac')
    assert compile_config(main_config, create_config, seed=0).policy.eval.evaluator.eval_freq_env_steps == 0


SAC_SHORT = ['policy.random_collect_size=50', 'policy.learn.batch_size=16', 'env.n_evaluator_episode=1',
             'policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]',
             'policy.eval.evaluator.eval_freq=1000', 'env.stop_value=null']


def test_extra_evaluations_do_not_change_training(tmp_path):
    """Deterministic evaluation (SAC's) draws nothing from the generators training uses: evaluating
    every 40 env steps or only at the start and end trains the same weights."""
    states = []
    for name, every in (('rare', 0), ('often', 40)):
        policy = serial_pipeline('pendulum_sac', seed=3, max_env_step=250, progress=False, overrides=[
            *SAC_SHORT, f'policy.eval.evaluator.eval_freq_env_steps={every}', f'exp_name={tmp_path / name}'])
        states.append(policy.learn_mode.state_dict())
    assert len(eval_env_steps(tmp_path / 'often')) > len(eval_env_steps(tmp_path / 'rare')) == 2
    for key, tensor in states[0]['model'].items():
        assert torch.equal(tensor, states[1]['model'][key]), key


def test_checkpoints_are_due_by_env_steps_too(tmp_path, monkeypatch):
    import tidal.entry.run as run_module
    saved = []
    original = run_module.Run._save_latest

    def save_latest(self, finished=None):
        saved.append(self.env_step)
        return original(self, finished)
    monkeypatch.setattr(run_module.Run, '_save_latest', save_latest)
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=1024, progress=False, overrides=[
        *ONE_UPDATE_PER_ROLLOUT, 'policy.learn.learner.save_ckpt_freq_env_steps=256', f'exp_name={tmp_path / "run"}'])
    # at the start, then after every 256 env steps from the first update (at 64), then at the end
    assert saved == [0, 320, 576, 832, 1024]


def test_period_runs_on_iterations_or_env_steps_whichever_comes_first():
    env_step = [0]
    period = Period(iters=5, env_steps=30, env_step=lambda: env_step[0])
    due = []
    for train_iter in range(1, 16):
        env_step[0] = 10 * train_iter
        if period.due(train_iter):
            due.append(train_iter)
    # from the first update (env step 10): 30 env steps at iteration 4, then iteration 5, then 30 steps later
    assert due == [4, 5, 8, 10, 13, 15]
    with pytest.raises(ValueError, match='must be >= 1 train iteration'):
        Period(iters=0)
