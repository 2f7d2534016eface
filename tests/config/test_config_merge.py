"""compile_config: layer precedence, unknown keys, types and overrides."""
from __future__ import annotations

import pytest

from tidal.config import compile_config
from tidal.base.errors import ConfigError, UnknownNameError
from tidal.registry import POLICY_REGISTRY


def compile_tiny(create_config, main=None, overrides=(), **kwargs):
    return compile_config(main or {}, create_config, overrides=overrides, **kwargs)


def error_of(create_config, main=None, overrides=()) -> str:
    with pytest.raises(ConfigError) as err:
        compile_tiny(create_config, main, overrides)
    return str(err.value)


def test_layers_policy_and_env_defaults_then_user_then_overrides(create_config):
    main = {'env': {'collector_env_num': 4}, 'policy': {'learn': {'batch_size': 32, 'learning_rate': 0.01}}}
    cfg = compile_tiny(create_config, main, overrides=['policy.learn.learning_rate=0.02'])
    assert cfg.policy.learn.update_per_collect == 1   # Policy base default
    assert cfg.policy.model.hidden_size == 32         # TinyPolicy default over the base
    assert cfg.env.stop_value == 100.0                # env default
    assert cfg.env.collector_env_num == 4             # user over env default
    assert cfg.policy.learn.batch_size == 32          # user over policy default
    assert cfg.policy.learn.learning_rate == 0.02     # override over user


def test_create_config_types_and_seed_are_written_into_the_tree(create_config):
    cfg = compile_tiny(create_config, seed=7)
    assert (cfg.env.type, cfg.env_manager.type, cfg.policy.type) == (
        'test_cfg_env', 'test_cfg_manager', 'test_cfg_policy')
    assert cfg.seed == 7
    assert cfg.exp_name == 'test_cfg_policy_Tiny-v0'


def test_user_exp_name_is_kept(create_config):
    assert compile_tiny(create_config, {'exp_name': 'mine'}).exp_name == 'mine'


def test_unknown_key_suggests_the_closest_sibling(create_config):
    message = error_of(create_config, {'policy': {'learn': {'batch_sise': 3}}})
    assert message == "unknown config key 'policy.learn.batch_sise'; did you mean 'policy.learn.batch_size'?"


def test_key_at_the_wrong_level_suggests_where_it_lives(create_config):
    message = error_of(create_config, {'policy': {'batch_size': 3}})
    assert message == "unknown config key 'policy.batch_size'; did you mean 'policy.learn.batch_size'?"


def test_unknown_key_without_close_match_lists_valid_keys(create_config):
    message = error_of(create_config, {'env': {'zzz': 1}})
    assert message == ("unknown config key 'env.zzz'; valid keys under 'env': collector_env_num, "
                       "env_id, env_kwargs, import_names, stop_value, type")


def test_wrong_type_names_the_key_and_value(create_config):
    message = error_of(create_config, {'policy': {'learn': {'batch_size': 'abc'}}})
    assert message == "config key 'policy.learn.batch_size' must be int, got str ('abc')"


@pytest.mark.parametrize('key, value, expected', [
    ('batch_size', True, 'int, got bool (True)'),
    ('batch_size', 32.0, 'int, got float (32.0)'),
    ('learning_rate', '1e-3', "float, got str ('1e-3')"),
    ('learning_rate', False, 'float, got bool (False)'),
])
def test_numbers_are_not_taken_from_other_types(create_config, key, value, expected):
    message = error_of(create_config, {'policy': {'learn': {key: value}}})
    assert message == f"config key 'policy.learn.{key}' must be {expected}"


def test_section_must_be_a_mapping(create_config):
    message = error_of(create_config, {'policy': {'learn': 5}})
    assert message == "config key 'policy.learn' must be a mapping, got int (5)"


@pytest.mark.parametrize('main, overrides, expected', [
    ({'policy': {'model': [1, 2]}}, (), "'policy.model' must be a mapping, got list ([1, 2])"),
    ({}, ['policy.model=[1, 2]'], "'policy.model' must be a mapping, got list ([1, 2])"),
    ({'policy': {'model': None}}, (), "'policy.model' must be a mapping, got None"),
    ({'env': {'env_kwargs': 'g=9.8'}}, (), "'env.env_kwargs' must be a mapping, got str ('g=9.8')"),
    ({}, ['env.env_kwargs=3'], "'env.env_kwargs' must be a mapping, got int (3)"),
    ({'env': [1]}, (), "'env' must be a mapping, got list ([1])"),
])
def test_free_form_sections_must_be_mappings_too(create_config, main, overrides, expected):
    assert error_of(create_config, main, overrides) == f'config key {expected}'


def test_int_is_accepted_and_stored_as_float_where_float_is_declared(create_config):
    cfg = compile_tiny(create_config, {'policy': {'learn': {'learning_rate': 1}}})
    assert cfg.policy.learn.learning_rate == 1.0 and isinstance(cfg.policy.learn.learning_rate, float)


def test_override_strings_holding_numbers_are_converted(create_config):
    cfg = compile_tiny(create_config, overrides=[
        "policy.learn.learning_rate='3e-4'", "policy.learn.batch_size='128'", 'exp_name=2024',
        'env.stop_value=1e3', 'policy.collect.n_sample = 8'])
    assert cfg.policy.learn.learning_rate == 3e-4
    assert cfg.policy.learn.batch_size == 128
    assert cfg.exp_name == '2024'
    assert cfg.env.stop_value == 1000.0
    assert cfg.policy.collect.n_sample == 8


def test_override_text_that_is_no_number_is_still_a_type_error(create_config):
    message = error_of(create_config, overrides=['policy.learn.batch_size=abc'])
    assert message == "config key 'policy.learn.batch_size' must be int, got str ('abc')"


def test_override_of_unknown_key_suggests_the_closest(create_config):
    message = error_of(create_config, overrides=['policy.learn.learning_rat=0.1'])
    assert message == ("unknown config key 'policy.learn.learning_rat'; "
                       "did you mean 'policy.learn.learning_rate' or 'policy.learn.learner'?")


def test_override_without_equals_sign_is_rejected(create_config):
    message = error_of(create_config, overrides=['policy.learn.batch_size'])
    assert message == ("override 'policy.learn.batch_size' must look like KEY=VALUE, "
                       "e.g. policy.learn.batch_size=128")


def test_free_dict_sections_accept_any_key(create_config):
    main = {'env': {'env_kwargs': {'max_episode_steps': 50, 'render_mode': None, 'nested': {'a': [1]}}}}
    cfg = compile_tiny(create_config, main, overrides=['env.env_kwargs.nested.b=2'])
    assert cfg.env.env_kwargs == {'max_episode_steps': 50, 'render_mode': None, 'nested': {'a': [1], 'b': 2}}


def test_key_with_none_default_accepts_any_value(create_config):
    cfg = compile_tiny(create_config, {'policy': {'model': {'hidden_size': 8}}})
    assert cfg.policy.model.hidden_size == 8


def test_nested_dicts_and_lists_of_dicts_become_easydicts(create_config):
    cfg = compile_tiny(create_config, {'env': {'env_kwargs': {'layers': [{'width': 3}]}}})
    assert cfg.env.env_kwargs.layers[0].width == 3


def test_priority_is_weight_needs_priority(create_config):
    message = error_of(create_config, {'policy': {'priority_IS_weight': True}})
    assert message == ('policy.priority_IS_weight is True but policy.priority is False; importance-'
                       'sampling weights need prioritized replay (set policy.priority=True)')
    cfg = compile_tiny(create_config, {'policy': {'priority': True, 'priority_IS_weight': True}})
    assert cfg.policy.priority_IS_weight


@pytest.mark.parametrize('device', ['cpu', 'cuda', 'auto', 'cuda:1'])
def test_valid_devices_are_kept_as_given(create_config, device):
    cfg = compile_tiny(create_config, {'policy': {'device': device, 'cuda': True}})
    assert (cfg.policy.device, cfg.policy.cuda) == (device, True)


def test_unknown_device_is_rejected_early(create_config):
    message = error_of(create_config, {'policy': {'device': 'gpu'}})
    assert message == "config key 'policy.device' must be 'cpu', 'cuda', 'auto' or 'cuda:N', got 'gpu'"


def test_unknown_create_config_key_is_named(create_config):
    create_config['policy']['tpye'] = 'x'
    message = error_of(create_config)
    assert message == "unknown config key 'create_config.policy.tpye'; did you mean 'create_config.policy.type'?"


def test_missing_policy_type_is_named():
    message = error_of({'env': {'type': 'test_cfg_env'}})
    assert message == 'no policy type: set create_config.policy.type'


def test_unknown_policy_type_raises_registry_error(create_config):
    create_config['policy']['type'] = 'test_cfg_polic'
    with pytest.raises(UnknownNameError, match="did you mean 'test_cfg_policy'"):
        compile_tiny(create_config)


def test_types_may_come_from_main_config_alone(create_config):
    main = {key: dict(section) for key, section in create_config.items()}
    cfg = compile_config(main)
    assert (cfg.env.type, cfg.policy.type) == ('test_cfg_env', 'test_cfg_policy')


def test_compile_does_not_change_its_inputs_or_class_defaults(create_config):
    main = {'policy': {'model': {'depth': 3}}}
    compile_tiny(create_config, main)
    assert main == {'policy': {'model': {'depth': 3}}}
    assert POLICY_REGISTRY.get('test_cfg_policy').config['model'] == {'hidden_size': 32}


def test_key_named_like_a_dict_method_is_rejected(create_config):
    message = error_of(create_config, {'env': {'env_kwargs': {'items': [1]}}})
    assert message == ("config key 'env.env_kwargs.items' has the name of a dict method, which the compiled "
                       "EasyDict could not keep apart from the method; rename it")
