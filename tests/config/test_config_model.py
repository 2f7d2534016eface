"""compile_config: policy.model against the model constructor, shape inference, import_names."""
from __future__ import annotations

import pytest

from tidal.config import compile_config
from tidal.base.errors import ConfigError, TidalError
from tidal.registry import ENV_REGISTRY, POLICY_REGISTRY


def model_error(create_config, model: dict, **kwargs) -> str:
    with pytest.raises(ConfigError) as err:
        compile_config({'policy': {'model': model}}, create_config, **kwargs)
    return str(err.value)


def test_model_keys_must_be_constructor_arguments(create_config):
    message = model_error(create_config, {'hiden_size': 16})
    assert message == ("policy.model.hiden_size is not an argument of model 'test_cfg_model'; "
                       "did you mean 'hidden_size'?")


def test_model_key_without_close_match_lists_the_arguments(create_config):
    message = model_error(create_config, {'zzz': 1})
    assert message == ("policy.model.zzz is not an argument of model 'test_cfg_model'; its arguments are: "
                       "action_shape, depth, hidden_size, obs_shape")


def test_model_type_picks_the_model_checked(create_config):
    message = model_error(create_config, {'type': 'test_cfg_width_model'})
    assert message == ("policy.model.hidden_size is not an argument of model 'test_cfg_width_model'; "
                       "its arguments are: action_shape, obs_shape, width")


def test_missing_required_model_argument_is_named(create_config, monkeypatch):
    policy_cls = POLICY_REGISTRY.get('test_cfg_policy')
    monkeypatch.setitem(policy_cls.config, 'model', {})
    message = model_error(create_config, {'type': 'test_cfg_width_model'})
    assert message == "model 'test_cfg_width_model' needs policy.model.width; set it in the config"
    cfg = compile_config({'policy': {'model': {'type': 'test_cfg_width_model', 'width': 5}}}, create_config)
    assert cfg.policy.model.width == 5


def test_shapes_are_inferred_from_one_env_build(create_config):
    env_cls = ENV_REGISTRY.get('test_cfg_env')
    cfg = compile_config({'policy': {'model': {'depth': 3}}}, create_config)
    assert (cfg.policy.model.obs_shape, cfg.policy.model.action_shape) == (3, 1)
    assert cfg.policy.model.depth == 3
    assert env_cls.builds == 1


def test_shapes_the_user_sets_are_kept_when_they_match_the_env(create_config):
    cfg = compile_config({'policy': {'model': {'obs_shape': [3], 'action_shape': (1,)}}}, create_config)
    assert (cfg.policy.model.obs_shape, cfg.policy.model.action_shape) == ([3], [1])


def test_shapes_the_user_sets_without_inference_are_kept(create_config):
    cfg = compile_config({'policy': {'model': {'obs_shape': [2, 5], 'action_shape': (6,)}}}, create_config,
                         infer_shapes=False)
    assert (cfg.policy.model.obs_shape, cfg.policy.model.action_shape) == ([2, 5], [6])


def test_without_inference_no_env_is_built_and_shapes_stay_unset(create_config):
    env_cls = ENV_REGISTRY.get('test_cfg_env')
    cfg = compile_config({}, create_config, infer_shapes=False)
    assert 'obs_shape' not in cfg.policy.model and env_cls.builds == 0


def test_action_space_mismatch_is_an_error(create_config):
    with pytest.raises(ConfigError) as err:
        compile_config({'env': {'env_id': 'CartPole-v1', 'env_kwargs': {'space': 'discrete'}}}, create_config)
    assert str(err.value) == ("policy 'test_cfg_policy' needs a continuous action space but env "
                              "'CartPole-v1' has a discrete one")


def test_import_names_register_a_users_policy(create_config, tmp_path, monkeypatch):
    module = tmp_path / 'my_tidal_policy.py'
    module.write_text(
        'from tidal.policies.base import Policy\n'
        'from tidal.registry import POLICY_REGISTRY\n\n\n'
        "@POLICY_REGISTRY.register('test_cfg_user_policy', force=True)\n"
        'class UserPolicy(Policy):\n'
        '    config = dict(learn=dict(\n'
        '        # (float in [0, 1]) Momentum.\n'
        '        momentum=0.9))\n\n'
        '    @classmethod\n'
        '    def default_model(cls, cfg):\n'
        "        return 'test_cfg_model', []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    create_config['policy'] = {'type': 'test_cfg_user_policy', 'import_names': ['my_tidal_policy']}
    cfg = compile_config({'policy': {'learn': {'momentum': 0.5}}}, create_config)
    assert cfg.policy.type == 'test_cfg_user_policy' and cfg.policy.learn.momentum == 0.5
    assert cfg.policy.import_names == ['my_tidal_policy']


def test_unimportable_module_is_named(create_config):
    with pytest.raises(TidalError, match="cannot import module 'no_such_tidal_module'"):
        compile_config({'import_names': ['no_such_tidal_module']}, create_config)


# ----- shapes a model cannot take ---------------------------------------------------------------

def sac_on(env_id: str, model: dict) -> dict:
    return {'env': {'env_id': env_id}, 'policy': {'model': model}}


SAC_CREATE = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}


def test_image_observations_for_an_mlp_model_are_one_line_naming_the_env():
    with pytest.raises(ConfigError) as err:
        compile_config(sac_on('CarRacing-v3', {}), SAC_CREATE)
    assert str(err.value) == ("env 'CarRacing-v3' gives policy.model.obs_shape [96, 96, 3] but model "
                              "'continuous_qac' takes int > 0 or list[int > 0] of length 1; MLP models take "
                              "flat vectors (use an encoder model for images)")


def test_an_image_shape_set_for_an_mlp_model_names_the_key():
    with pytest.raises(ConfigError) as err:
        compile_config(sac_on('Pendulum-v1', {'obs_shape': [3, 4, 4]}), SAC_CREATE, infer_shapes=False)
    assert str(err.value) == ("config key 'policy.model.obs_shape' must be a list of length 1, got [3, 4, 4]; "
                              "MLP models take flat vectors (use an encoder model for images)")


def test_flat_shapes_keep_the_mlp_models_rule():
    cfg = compile_config(sac_on('Pendulum-v1', {'obs_shape': [3]}), SAC_CREATE)
    assert (cfg.policy.model.obs_shape, cfg.policy.model.action_shape) == ([3], 1)
