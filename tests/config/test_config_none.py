"""None where a key's rule says 'or None': taken from `--set KEY=null`, YAML `null` and Python None alike; refused
elsewhere with a line that says so."""
from __future__ import annotations

import pytest

from tidal.config import ConfigLayers, compile_config, resolve_config_source
from tidal.config.layered import load_layered
from tidal.config.compiler import BUILTIN_MODULES
from tidal.config.declared import rules_by_path
from tidal.config.run_config import RunConfig
from tidal.config.tree import MISSING, value_at
from tidal.config.loader import zoo_names
from tidal.base.errors import ConfigError
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, import_names, policy_class

#: Zoo configs on envs that build in milliseconds come first when a policy's config is picked.
_QUICK_ENVS = ('pendulum', 'cartpole', 'acrobot', 'mountaincar')


def _zoo_config_of_each_policy() -> dict[str, str]:
    """Policy type -> one zoo config that trains it, a quick env's where there is one."""
    names = sorted(zoo_names(), key=lambda name: not name.startswith(_QUICK_ENVS))
    found: dict[str, str] = {}
    for name in names:
        found.setdefault(resolve_config_source(name)[1]['policy']['type'], name)
    return found


import_names(BUILTIN_MODULES)
ZOO_OF = _zoo_config_of_each_policy()


def test_every_builtin_policy_has_a_zoo_config_to_walk():
    builtin = [name for name in POLICY_REGISTRY.names() if POLICY_REGISTRY.get(name).__module__.startswith('tidal.')]
    assert sorted(builtin) == sorted(ZOO_OF)


def _rules_of(cfg) -> dict:
    return rules_by_path((('', RunConfig, None), ('env', ENV_REGISTRY.get(cfg.env.type), None),
                          ('env_manager', ENV_MANAGER_REGISTRY.get(cfg.env_manager.type), None),
                          ('policy', policy_class(cfg.policy.type, cfg.policy), cfg.policy)))


@pytest.mark.parametrize('policy', sorted(ZOO_OF))
def test_every_key_whose_rule_allows_none_takes_null_from_set(policy):
    main, create = resolve_config_source(ZOO_OF[policy])
    nullable = [path for path, rule in _rules_of(compile_config(main, create)).items() if rule.allows_none]
    assert nullable  # at least env.stop_value
    for path in nullable:
        cfg = compile_config(main, create, overrides=[f'{path}=null'])
        assert value_at(cfg, path, MISSING) is None, path


def test_grad_clip_norm_none_is_taken_from_yaml_python_and_set(tmp_path):
    yaml_file = tmp_path / 'no_clip.yaml'
    yaml_file.write_text('main_config:\n  policy:\n    learn:\n      grad_clip_norm: null\n')
    py_file = tmp_path / 'no_clip.py'
    py_file.write_text('main_config = dict(policy=dict(learn=dict(grad_clip_norm=None)))\n')
    assert compile_config(*resolve_config_source('cartpole_ppo')).policy.learn.grad_clip_norm == 0.5
    for source in (yaml_file, py_file):
        cfg = load_layered(ConfigLayers('cartpole_ppo', [source])).cfg
        assert cfg.policy.learn.grad_clip_norm is None, source
    main, create = resolve_config_source('cartpole_ppo')
    main['policy']['learn']['grad_clip_norm'] = None
    assert compile_config(main, create).policy.learn.grad_clip_norm is None
    cfg = compile_config(*resolve_config_source('cartpole_ppo'), overrides=['policy.learn.grad_clip_norm=null'])
    assert cfg.policy.learn.grad_clip_norm is None


def test_a_none_the_rule_refuses_is_an_error_that_says_so():
    main, create = resolve_config_source('cartpole_ppo')
    refused = ("config key 'policy.learn.batch_size' must be int > 0, got None; None is not allowed for this key "
               "(a key whose rule says 'or None' takes null in YAML and --set, None in Python)")
    with pytest.raises(ConfigError) as err:
        compile_config(main, create, overrides=['policy.learn.batch_size=null'])
    assert str(err.value) == refused
    main['policy']['learn']['batch_size'] = None
    with pytest.raises(ConfigError) as err:
        compile_config(main, create)
    assert str(err.value) == refused


@pytest.mark.parametrize('path, rule', [
    ('policy.learn.grad_clip_norm', 'float > 0 or None'),     # declared 0.5
    ('policy.learn.decay_env_steps', 'int > 0 or None'),      # declared None
])
def test_the_text_none_where_a_rule_takes_none_says_to_write_null(path, rule):
    with pytest.raises(ConfigError) as err:
        compile_config(*resolve_config_source('cartpole_ppo'), overrides=[f'{path}=None'])
    assert str(err.value) == (f"config key '{path}' must be {rule}, got str ('None'); write None as null in YAML "
                              f"and --set (None in Python)")
