"""Short runs of the off-policy pipeline from Python: repeatability and the less common wiring."""
import csv
import json
import shutil

import pytest
import torch

from tidal import Policy, RunResult, serial_pipeline
from tidal.entry.pipelines import resume
from tidal.config import resolve_config_source
from tidal.base.errors import ConfigError
from tidal.rl_utils import StepType
from tidal.worker.checkpoint import load_checkpoint

COUNTER_ID = 'tidal_test/Counter-v0'  # registered by tests/conftest.py

SHORT = ['policy.random_collect_size=50', 'policy.learn.batch_size=16', 'policy.eval.evaluator.eval_freq=1000',
         'env.n_evaluator_episode=1', 'env.evaluator_env_num=1', 'policy.model.actor_hidden_sizes=[16]',
         'policy.model.critic_hidden_sizes=[16]']


def train(tmp_path, name, config='pendulum_sac', overrides=(), steps=120, seed=0):
    return serial_pipeline(config, seed=seed, max_env_step=steps, progress=False,
                           overrides=[*SHORT, f'exp_name={tmp_path / name}', *overrides])


def weights(policy):
    return [p.detach().clone() for p in policy.model.parameters()]


def test_same_seed_gives_the_same_weights(tmp_path):
    first = weights(train(tmp_path, 'a', seed=3))
    second = weights(train(tmp_path, 'b', seed=3))
    other = weights(train(tmp_path, 'c', seed=4))
    assert all(torch.equal(x, y) for x, y in zip(first, second))
    assert not all(torch.equal(x, y) for x, y in zip(first, other))


def test_the_result_gives_the_policy_the_run_folder_and_its_eval_history(tmp_path):
    result = train(tmp_path, 'result', overrides=['policy.eval.evaluator.eval_freq=20'])
    assert isinstance(result, RunResult) and isinstance(result.policy, Policy)
    assert result.run_dir == tmp_path / 'result'
    with open(result.run_dir / 'evals.csv', newline='') as file:
        rows = list(csv.DictReader(file))
    assert len(result.evals) == len(rows) >= 2
    assert [(row['env_step'], row['train_iter']) for row in result.evals] == [
        (int(row['env_step']), int(row['train_iter'])) for row in rows]
    assert [row['return_mean'] for row in result.evals] == [float(row['return_mean']) for row in rows]
    assert result.evals[-1]['env_step'] == 120
    # callers that took the result for the policy keep working
    assert result.cfg is result.policy.cfg and result.model is result.policy.model
    assert result.eval_mode.forward(torch.zeros(1, 3))['action'].shape == (1, 1)
    with pytest.raises(AttributeError, match='no_such_thing'):
        result.no_such_thing


def test_resume_gives_a_result_too(tmp_path):
    first = train(tmp_path, 'again', overrides=['policy.eval.evaluator.eval_freq=20'], steps=90)
    shutil.rmtree(first.run_dir / 'ckpt')  # as if killed before its first checkpoint: resume starts it again
    again = resume(first.run_dir, progress=False)
    assert isinstance(again, RunResult) and again.run_dir == first.run_dir
    returns = [(row['env_step'], row['return_mean']) for row in first.evals]
    assert returns and [(row['env_step'], row['return_mean']) for row in again.evals] == returns


def test_prioritized_replay_and_vector_envs_run(tmp_path):
    policy = train(tmp_path, 'per', overrides=['policy.priority=true', 'policy.priority_IS_weight=true',
                                               'env.collector_env_num=3', 'policy.collect.n_sample=3'])
    assert policy.cfg.priority


def test_discrete_sac_with_action_mask_observations(tmp_path):
    main_config, create_config = resolve_config_source('cartpole_discrete_sac')
    main_config['env'].update(env_id=COUNTER_ID, stop_value=None,
                              env_kwargs={'dict_obs': True, 'terminate_at': 7})
    policy = serial_pipeline((main_config, create_config), max_env_step=100, progress=False,
                             overrides=[*SHORT, f'exp_name={tmp_path / "masked"}'])
    assert policy.cfg.model.obs_shape == 1 and policy.cfg.model.action_shape == 2


TAAC_SHORT = ['policy.random_collect_size=64', 'policy.learn.batch_size=8', 'policy.model.actor_hidden_sizes=[16,16]',
              'policy.model.critic_hidden_sizes=[16,16]', 'policy.eval.evaluator.eval_freq=100',
              # short episodes put episode ends inside the replayed sequences; no stop value: run the whole budget
              'env.env_kwargs.max_episode_steps=40', 'env.stop_value=null']


@pytest.mark.parametrize('config, size', [('pendulum_taac', 1), ('pendulum_taac_l', 2), ('pendulum_taac_q', 3)])
def test_taac_variants_train_on_sequences_and_write_their_run_folder(tmp_path, config, size):
    policy = train(tmp_path, config, config=config, overrides=TAAC_SHORT, steps=120)
    run = tmp_path / config
    for name in ('config.yaml', 'ckpt/latest.pt', 'evals.csv', 'summary.json'):
        assert (run / name).is_file(), name
    with open(run / 'evals.csv') as f:
        assert len(list(csv.DictReader(f))) >= 1
    # 120 env steps, the first 64 random: one update per later step
    assert json.loads((run / 'summary.json').read_text())['train_iter'] == 120 - 64
    assert policy.cfg.learn.batch_size == 8 and policy.model.trajectory_size == size
    columns = load_checkpoint(run / 'ckpt' / 'latest.pt')['feed']['buffer']['columns']
    assert columns['tau'].shape == (120, size, 1) and columns['prev_tau'].shape == (120, size, 1)
    assert columns['switch'].dtype == torch.bool and columns['step_type'].dtype == torch.int8
    # episodes of 40 steps: rows 0, 40, 80 open one, rows 39, 79, 119 end one by the time limit
    assert columns['truncated'].nonzero().flatten().tolist() == [39, 79, 119]
    assert (columns['step_type'] == StepType.FIRST).nonzero().flatten().tolist() == [0, 40, 80]
    assert (columns['step_type'] == StepType.LAST).nonzero().flatten().tolist() == [39, 79, 119]
    assert not columns['prev_tau'][[0, 40, 80]].any()  # each episode starts from a zero trajectory


def test_prioritized_replay_of_sequences_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match='policy.priority: prioritized replay samples single transitions, but '
                                          'policy.collect.unroll_len is 4; set priority=False'):
        train(tmp_path, 'per_taac', config='pendulum_taac', overrides=[*TAAC_SHORT, 'policy.priority=true'])


def test_run_that_cannot_be_built_leaves_no_run_folder(tmp_path):
    with pytest.raises(ConfigError, match='policy.learn.switch_advantage_clip must be'):
        train(tmp_path, 'broken', config='pendulum_taac',
              overrides=[*TAAC_SHORT, 'policy.learn.switch_advantage_clip=[1,0]'])
    assert not (tmp_path / 'broken').exists()
