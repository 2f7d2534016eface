"""Short runs of the off-policy pipeline from Python: repeatability and the less common wiring."""
import torch

from tidal import serial_pipeline
from tidal.config import resolve_config_source

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
