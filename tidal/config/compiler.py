"""compile_config: one checked EasyDict from a config's two entries, a seed and `--set` overrides.

Layers, later winning: the policy's and env's `config` defaults, the types from create_config, the
user's main_config, the overrides. Every layer after the defaults is checked against them.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

from easydict import EasyDict

from tidal.config import ding
from tidal.config.checks import checked_value, merge_checked
from tidal.config.declared import check_declared, class_rules, rules_by_path
from tidal.config.run_config import RunConfig
from tidal.config.env_probe import env_name, probe_env
from tidal.config.limits import check_collector, check_consistency, check_memory
from tidal.config.model_args import (SHAPE_KEYS, check_model_keys, check_model_values,
                                     check_required_model_keys, model_args)
from tidal.config.overrides import apply_override, parse_overrides
from tidal.config.tree import as_dicts, shadowed_keys, to_plain, value_at
from tidal.base.defaults import class_defaults, merge_defaults
from tidal.base.errors import ConfigError, TidalError
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, feed_class, import_names, policy_class

#: Packages whose import registers the built-in policies, models, envs and env managers.
BUILTIN_MODULES = ('tidal.models', 'tidal.envs', 'tidal.policies', 'tidal.worker.feeds')

_CREATE_SCHEMA = {
    'env': {'type': '', 'import_names': []},
    'env_manager': {'type': ''},
    'policy': {'type': '', 'import_names': []},
}
#: Where a config names the modules to import before its types resolve.
IMPORT_PATHS = (('import_names',), ('env', 'import_names'), ('policy', 'import_names'))
_DEVICE = re.compile(r'cpu|cuda|auto|cuda:\d+')
#: The largest seed: torch, numpy and gymnasium all take seeds in [0, 2**63 - 1].
MAX_SEED = 2**63 - 1


def compile_config(main_config: dict, create_config: Optional[dict] = None, seed: Optional[int] = None,
                   overrides: Iterable[str] = (), infer_shapes: bool = True) -> EasyDict:
    """The full config of a run. Without `create_config` the types come from main_config's
    `env.type` / `policy.type`. Every value is checked against the rule its default's comment declares
    (and `policy.model` against the model constructor's type hints), then across keys, and sizes are
    checked against the memory available. The env is built once (see `probe_env`): it fills and checks
    the model's shapes and steps once, so bad env arguments fail here, before a run folder exists;
    `infer_shapes=False` skips it (no shape inference, no env check).
    `seed` (the CLI's -s) wins over the config's `seed` key; with neither the seed is 0."""
    # DI-engine's env types and keys become tidal's first; the run folder gets the table (tidal.config.ding)
    main, create, ding_mapping = ding.translate(_section(main_config, 'main_config'),
                                           _section(create_config, 'create_config'), _model_accepts, _policy_family)
    create = merge_checked(_CREATE_SCHEMA, {}, create, 'create_config')
    parsed = parse_overrides(overrides)
    layers = [create, main, *(override.as_tree() for override in parsed)]

    policy_type = _required_type(layers, 'policy')
    env_type = _required_type(layers, 'env')
    manager_type = _layered(layers, ('env_manager', 'type')) or 'base'
    modules = {path: _module_union(layers, path) for path in IMPORT_PATHS}
    import_names(BUILTIN_MODULES)
    for names in modules.values():
        import_names(names)
    # a policy that holds another takes that one's keys too, as the user's values name it (config_owners)
    policy_section = _layered_section(layers, 'policy')
    policy_cls = policy_class(policy_type, policy_section)
    env_cls = ENV_REGISTRY.get(env_type)
    manager_cls = ENV_MANAGER_REGISTRY.get(manager_type)

    schema = class_defaults(RunConfig)
    schema['env'] = merge_defaults({'type': '', 'import_names': []}, class_defaults(env_cls))
    schema['env_manager'] = merge_defaults({'type': ''}, class_defaults(manager_cls))
    schema['policy'] = merge_defaults({'type': '', 'import_names': []}, class_defaults(policy_cls, policy_section))

    rules = rules_by_path((('', RunConfig, None), ('env', env_cls, None), ('env_manager', manager_cls, None),
                           ('policy', policy_cls, policy_section)))
    cfg = merge_checked(schema, schema, main, rules=rules)
    for override in parsed:
        cfg = apply_override(schema, cfg, override, rules)
    cfg = to_plain(cfg)
    _check_key_names(cfg)
    cfg['env'].update(type=env_type, import_names=modules[('env', 'import_names')])
    cfg['env_manager']['type'] = manager_type
    cfg['policy'].update(type=policy_type, import_names=modules[('policy', 'import_names')])
    cfg['import_names'] = modules[('import_names',)]
    cfg['seed'] = checked_seed(cfg['seed'] if seed is None else seed)
    if not cfg['exp_name']:
        cfg['exp_name'] = default_exp_name(policy_type, cfg['env'])

    _check_policy(cfg['policy'])
    check_declared(cfg, (('', RunConfig), ('env', env_cls), ('env_manager', manager_cls), ('policy', policy_cls)))
    model_cfg = cfg['policy']['model']
    args = model_args(policy_cls, policy_type, model_cfg, cfg['policy'])
    check_model_keys(args, model_cfg)
    declared_model_keys = {path.split('.', 1)[1] for path in class_rules(policy_cls, cfg['policy'])
                           if path.startswith('model.')}
    unset_shapes = {key for key in SHAPE_KEYS if model_cfg.get(key) is None}
    check_model_values(args, model_cfg, skip=frozenset(declared_model_keys | unset_shapes))
    check_consistency(cfg)
    check_collector(cfg, policy_cls)
    feed_class(policy_cls).check_config(cfg)  # keys the policy's data feed refuses
    env_info: dict = {}
    if infer_shapes:
        env_info = probe_env(cfg, args, policy_cls, env_cls)
    check_required_model_keys(args, model_cfg, skip=() if infer_shapes else SHAPE_KEYS)
    discrete = (env_info.get('action_space') or policy_cls.action_space_of(cfg['policy'])) == 'discrete'
    check_memory(cfg, env_name(cfg['env']), discrete, policy_cls)
    compiled = EasyDict(to_plain(cfg))
    ding.remember(compiled, ding_mapping)
    return compiled


def checked_seed(seed: Any) -> int:
    """`seed` as an int in [0, MAX_SEED], or a ConfigError naming the `seed` key."""
    seed = checked_value(0, seed, 'seed')
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"config key 'seed' must be an int in [0, 2**63 - 1], got {seed}")
    return seed


def default_exp_name(policy_type: str, env_cfg: dict) -> str:
    """'<policy type>_<env id>' (the env type when there is no env id), safe as a folder name."""
    env_name = env_cfg.get('env_id') or env_cfg['type']
    return re.sub(r'[^A-Za-z0-9_.-]+', '_', f'{policy_type}_{env_name}')


def _model_accepts(policy_type: str, policy_section: dict) -> Optional[frozenset]:
    """The argument names of the model `policy_type` builds under `policy_section` (None: any), for tidal.config.ding;
    None too when the policy is unknown, whose error comes from the checks that follow."""
    if not _known_policy(policy_type, policy_section):
        return None
    try:
        policy_cls = policy_class(policy_type, policy_section)
        model = policy_section.get('model')
        model_cfg = model if isinstance(model, dict) else {}
        return model_args(policy_cls, policy_type, model_cfg, policy_section).accepted
    except TidalError:
        return None


def _policy_family(policy_type: str, policy_section: dict) -> frozenset:
    """The registered names of `policy_type`'s class and its bases, for tidal.config.ding's rules; the type alone when
    it is unknown, whose error comes from the checks that follow."""
    if not _known_policy(policy_type, policy_section):
        return frozenset({policy_type}) if isinstance(policy_type, str) else frozenset()
    return POLICY_REGISTRY.family(policy_type)


def _known_policy(policy_type: Any, policy_section: dict) -> bool:
    """Whether `policy_type` is registered once the built-ins and the section's import names are imported."""
    if not isinstance(policy_type, str) or not policy_type:
        return False
    import_names(BUILTIN_MODULES)
    import_names([name for name in policy_section.get('import_names') or [] if isinstance(name, str)])
    return policy_type in POLICY_REGISTRY


def _section(entry: Any, name: str) -> dict:
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ConfigError(f'{name} must be a mapping, got {type(entry).__name__}')
    return as_dicts(entry)


def _layered(layers: list[dict], path: tuple[str, ...]) -> Any:
    """The value at `path` in the last layer that sets it."""
    found = None
    for layer in layers:
        value = value_at(layer, path)
        if value is not None and value != '':
            found = value
    return found


def _layered_section(layers: list[dict], section: str) -> dict:
    """The section as the layers set it, later layers winning key by key (no defaults yet)."""
    merged: dict = {}
    for layer in layers:
        value = layer.get(section)
        if isinstance(value, Mapping):
            merged = merge_defaults(merged, value)
    return merged


def _required_type(layers: list[dict], section: str) -> str:
    name = _layered(layers, (section, 'type'))
    if name is None:
        raise ConfigError(f'no {section} type: set create_config.{section}.type')
    if not isinstance(name, str):
        raise ConfigError(f"config key '{section}.type' must be str, got {type(name).__name__} ({name!r})")
    return name


def _module_union(layers: list[dict], path: tuple[str, ...]) -> list[str]:
    """Modules named at `path` in any layer, in order, each once: imports add up across layers."""
    modules: list[str] = []
    for layer in layers:
        names = value_at(layer, path)
        if names is None:
            continue
        if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
            raise ConfigError(f"config key '{'.'.join(path)}' must be a list of module names, "
                              f"got {type(names).__name__} ({names!r})")
        modules += [name for name in names if name not in modules]
    return modules


def _check_key_names(cfg: dict) -> None:
    """EasyDict would hide dict methods behind keys such as `items`, breaking code that iterates."""
    shadowed = shadowed_keys(cfg)
    if shadowed:
        raise ConfigError(f"config key '{shadowed[0]}' has the name of a dict method, which the compiled "
                          f"EasyDict could not keep apart from the method; rename it")


def _check_policy(policy: dict) -> None:
    """Early errors for settings the policy would only reject once it is built."""
    if policy.get('priority_IS_weight') and not policy.get('priority'):
        raise ConfigError('policy.priority_IS_weight is True but policy.priority is False; importance-'
                          'sampling weights need prioritized replay (set policy.priority=True)')
    device = policy.get('device')
    if device is not None and not _DEVICE.fullmatch(str(device)):
        raise ConfigError(f"config key 'policy.device' must be 'cpu', 'cuda', 'auto' or 'cuda:N', "
                          f"got {device!r}")
