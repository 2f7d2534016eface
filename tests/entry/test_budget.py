"""`--max-env-step` means what it says: a run passes it by less than one step of every collector env (its
last collection is cut), and a budget that ends before the first update is refused before the run starts."""
from __future__ import annotations

import json

import pytest

from tidal import serial_pipeline, serial_pipeline_onpolicy
from tidal.base.errors import ConfigError

SMALL_EVAL = ['env.n_evaluator_episode=1', 'env.evaluator_env_num=1', 'env.stop_value=null']


def summary(run):
    return json.loads((run / 'summary.json').read_text())


def test_a_rollout_that_would_pass_the_budget_is_cut(tmp_path):
    # cartpole_ppo collects 512 env steps per rollout over 8 envs: 700 is one rollout and a cut one of 188 (192)
    serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=700, progress=False, overrides=[
        *SMALL_EVAL, 'policy.learn.epoch_per_collect=1', 'policy.learn.batch_size=64', f'exp_name={tmp_path / "run"}'])
    assert summary(tmp_path / 'run')['env_step'] == 704  # 700 rounded up to whole steps of the 8 envs
    # both rollouts were learnt from: 512 / 64 minibatches, then 192 / 64
    assert summary(tmp_path / 'run')['train_iter'] == 8 + 3


def test_a_ppg_run_cut_before_its_aux_phase_learns_the_cut_rollout_without_one(tmp_path):
    serial_pipeline_onpolicy('cartpole_ppg', seed=0, max_env_step=600, progress=False,
                             overrides=[*SMALL_EVAL, 'policy.aux.interval=1', f'exp_name={tmp_path / "run"}'])
    run = summary(tmp_path / 'run')
    assert run['env_step'] == 600
    assert run['outcome'] == 'budget of 600 env steps reached'


def test_an_off_policy_collection_is_cut_to_the_budget_left(tmp_path):
    serial_pipeline('pendulum_sac', seed=0, max_env_step=260, progress=False, overrides=[
        *SMALL_EVAL, 'policy.random_collect_size=100', 'policy.collect.n_sample=64', 'policy.learn.batch_size=32',
        'policy.learn.update_per_collect=1', f'exp_name={tmp_path / "run"}'])
    run = summary(tmp_path / 'run')
    assert run['env_step'] == 260  # 100 random, then 64, 64 and a cut 32
    assert run['train_iter'] == 3


def test_a_budget_spent_on_the_warm_up_is_refused_before_the_run_starts(tmp_path):
    with pytest.raises(ConfigError) as err:
        serial_pipeline('pendulum_sac', seed=0, max_env_step=1000, progress=False,
                        overrides=[f'exp_name={tmp_path / "run"}'])
    assert str(err.value) == ('policy.random_collect_size 1000 >= budget 1000 env steps: this run would make no '
                              'update; raise --max-env-step or lower policy.random_collect_size')
    assert not (tmp_path / 'run').exists()


def test_a_run_with_an_infinite_stop_value_and_no_budget_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='^nothing would end this run: .* or a finite env.stop_value$'):
        serial_pipeline('pendulum_sac', seed=0, progress=False,
                        overrides=['env.stop_value=inf', f'exp_name={tmp_path / "run"}'])
