"""The MuJoCo zoo configs compile and train: tiny budgets and networks check the settings fit, not learning."""
import gymnasium
import pytest

from tidal.entry.pipelines import train
from tidal.entry.setup import load_layered

ENVS = {'hopper': 'Hopper-v5', 'halfcheetah': 'HalfCheetah-v5', 'walker2d': 'Walker2d-v5'}
TINY = {
    'sac': ['policy.random_collect_size=32', 'policy.learn.batch_size=8',
            'policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]'],
    'taac': ['policy.random_collect_size=32', 'policy.learn.batch_size=4',
             'policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]'],
    'ppo': ['policy.collect.n_sample=64', 'policy.learn.batch_size=32', 'policy.model.encoder_hidden_sizes=[16]'],
}
CONFIGS = [(f'{env}_{algorithm}', env_id, algorithm) for env, env_id in ENVS.items() for algorithm in TINY]
# under ALF's TAAC settings, both arms
CONFIGS += [(f'halfcheetah_{algorithm}_alf', 'HalfCheetah-v5', algorithm) for algorithm in ('sac', 'taac')]


@pytest.mark.parametrize('config, env_id, algorithm', CONFIGS)
def test_mujoco_zoo_config_compiles_for_its_env(config, env_id, algorithm):
    cfg = load_layered(config, 0, ()).cfg
    assert (cfg.exp_name, cfg.env.env_id, cfg.policy.type) == (config, env_id, algorithm)
    assert cfg.policy.model.obs_shape is not None and cfg.policy.model.action_shape is not None
    # a run stops at gymnasium's reward threshold where the task has one (Walker2d has none: give a budget)
    assert cfg.env.stop_value == gymnasium.spec(env_id).reward_threshold


@pytest.mark.parametrize('config, env_id, algorithm', CONFIGS)
def test_mujoco_zoo_config_trains_a_few_env_steps(tmp_path, config, env_id, algorithm):
    overrides = [*TINY[algorithm], 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                 'env.env_kwargs.max_episode_steps=50', f'exp_name={tmp_path / config}']  # short evaluations
    result = train(config, seed=0, max_env_step=128, overrides=overrides, progress=False)
    assert result.evals and result.evals[-1]['env_step'] == 128


@pytest.mark.parametrize('algorithm', ['sac', 'taac'])
def test_the_alf_configs_differ_from_the_shipped_ones_by_alfs_settings_alone(algorithm):
    alf, shipped = (load_layered(name, 0, ()).cfg.policy for name in (f'halfcheetah_{algorithm}_alf',
                                                                     f'halfcheetah_{algorithm}'))
    assert (alf.normalize.reward, alf.normalize.clip) == (True, 1.0)
    assert (alf.learn.alpha, alf.learn.target_entropy) == (1.0, '-1.61*dim')
    assert alf.learn.get('switch_alpha', 1.0) == 1.0
    for key in ('normalize', 'learn'):
        alf.pop(key), shipped.pop(key)
    assert alf == shipped
