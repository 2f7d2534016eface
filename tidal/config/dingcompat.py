"""DI-engine configs as they are: its env types, key names and options, turned into tidal's before checking.

`translate` applies the tables of `ding_tables` (`ENV_TYPES`: DI-engine env type -> the gymnasium id tidal's
'gym' adapter makes; `KEY_RULES`: DI-engine key path -> renamed, converted or ignored, and why) to the
user's main_config and create_config, and returns one notice per thing it did. Keys in neither table are
left for the strict checks, which reject unknown ones with a did-you-mean. DI-engine's model head layout
(`actor_head_hidden_size`, ...) becomes tidal's hidden-size lists here, since where it goes depends on the
model the policy builds.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional

from tidal.config.ding_tables import ENV_TYPES, KEY_RULES, MUJOCO_ID, OLD_ENV_IDS, SIZES_WHY, KeyRule
from tidal.base.errors import ConfigError

#: Packages of DI-engine itself; import names under them are dropped (tidal never imports DI-engine).
DING_PACKAGES = ('ding', 'dizoo')

_MODEL_SIZE_KEYS = ('encoder_hidden_size_list', 'actor_head_hidden_size', 'actor_head_layer_num',
                    'critic_head_hidden_size', 'critic_head_layer_num')
#: DI-engine's defaults of its head layout (QAC / DiscreteQAC / VAC), for the keys a config leaves out.
_HEAD_DEFAULTS = {'actor_head_hidden_size': 64, 'actor_head_layer_num': 1, 'critic_head_hidden_size': 64,
                  'critic_head_layer_num': 1}
_VAC_ENCODER_DEFAULT = [128, 128, 64]
#: DI-engine's QAC `action_space` values, which name its actor head rather than the env's action space.
_QAC_ACTION_SPACES = ('reparameterization', 'regression', 'hybrid')

ModelAccepts = Callable[[str, dict], Optional[frozenset]]


def translate(main: dict, create: dict, model_accepts: ModelAccepts) -> tuple[dict, dict, list[str]]:
    """(main, create, notices): copies with DI-engine's env types, import names and keys turned into tidal's,
    and one notice per thing done. `model_accepts(policy_type, policy_section)` names the arguments of the
    model the policy will build (None: any), which decides where DI-engine's head sizes go."""
    main, create = copy.deepcopy(main), copy.deepcopy(create)
    notices: list[str] = []
    _translate_create(main, create, notices)
    _translate_model(main, create, model_accepts, notices)
    for rule in KEY_RULES:
        if rule.path.startswith('policy.model.') and rule.action == 'convert':
            continue  # done together by _translate_model
        found, value = _pop(main, rule.path, dry_run=True)
        if found:
            _apply(main, rule, value, notices)
    return main, create, notices


def _apply(main: dict, rule: KeyRule, value: Any, notices: list[str]) -> None:
    if rule.action == 'ignore':
        _pop(main, rule.path)
        notices.append(f"ignored DI-engine key '{rule.path}' ({value!r}): {rule.why}")
        return
    if rule.action == 'rename':
        updates = {rule.target: value}
    else:
        assert rule.convert is not None, f"KeyRule '{rule.path}' ({rule.action}) has no convert"
        converted = rule.convert(value, main)
        if converted is None:
            return  # a value tidal reads as it is
        updates = converted
    _pop(main, rule.path)
    for path, new in updates.items():
        _set(main, path, new, rule.path)
    if rule.action == 'rename':
        notices.append(f"DI-engine key '{rule.path}' is tidal's '{rule.target}': set it to {value!r}")
    elif updates:
        done = ', '.join(f"'{path}' = {new!r}" for path, new in updates.items())
        notices.append(f"DI-engine key '{rule.path}' ({value!r}) became {done}: {rule.why}")
    else:
        notices.append(f"dropped DI-engine key '{rule.path}' ({value!r}): {rule.why}")


# ----- create_config and the env section -------------------------------------------------------------
def _translate_create(main: dict, create: dict, notices: list[str]) -> None:
    for section in ('env', 'policy'):
        names = _get(create, f'{section}.import_names')
        if isinstance(names, list):
            kept = [name for name in names if not _is_ding_module(name)]
            instead = 'its gym adapter makes the env' if section == 'env' else 'its own policies are registered'
            for name in names:
                if name not in kept:
                    notices.append(f"dropped create_config.{section}.import_names entry '{name}': a DI-engine "
                                   f"module, which tidal does not import ({instead})")
            create[section]['import_names'] = kept
    manager = _get(create, 'env_manager.type')
    if manager == 'async_subprocess':
        create['env_manager']['type'] = 'subprocess'
        notices.append("DI-engine env manager 'async_subprocess' runs as tidal's 'subprocess' (one process per env)")
    if 'replay_buffer' in create:
        notices.append(f"ignored create_config.replay_buffer ({create.pop('replay_buffer')!r}): tidal's replay "
                       f"buffer is set by policy.priority and policy.other.replay_buffer")
    env_type = _get(main, 'env.type') or _get(create, 'env.type')  # main_config's wins, as in compile_config
    if isinstance(env_type, str) and env_type in ENV_TYPES:
        _translate_env(env_type, main, create, notices)
    if _get(create, 'policy.type') == 'sac' and (_has(main, 'policy.expert_random_collect_size')
                                                 or _has(main, 'policy.collect.model_path')):
        create['policy']['type'] = 'sqil_sac'
        notices.append("DI-engine's SQIL config (policy type 'sac' with SQIL's expert keys) runs as tidal's policy "
                       "type 'sqil_sac'")


def _translate_env(env_type: str, main: dict, create: dict, notices: list[str]) -> None:
    env = main.setdefault('env', {})
    if not isinstance(env, dict):
        return  # the strict checks name the wrong type
    given = env.get('env_id')
    if env_type == 'atari':
        raise ConfigError(f"DI-engine env type 'atari' (env.env_id {given!r}) is not supported: "
                          f"{ENV_TYPES['atari'].note}")
    if env_type == 'mujoco':
        if not given:
            raise ConfigError("DI-engine env type 'mujoco' needs env.env_id, e.g. 'Hopper-v3'")
        env_id = MUJOCO_ID.sub(lambda match: f'{match.group(1)}-v5', given)
        kwargs: dict = {}
    else:
        env_id, kwargs = OLD_ENV_IDS.get(given, (given, {})) if given else \
            (ENV_TYPES[env_type].env_id, dict(ENV_TYPES[env_type].env_kwargs))
    for section in (env, create.get('env')):
        if isinstance(section, dict) and 'type' in section:
            section['type'] = 'gym'
    env['env_id'] = env_id
    renamed = f" (DI-engine's env.env_id {given!r}, gymnasium's current version)" if given and given != env_id else ''
    notices.append(f"DI-engine env type '{env_type}' runs as tidal's env type 'gym' with env.env_id="
                   f"'{env_id}'{renamed}")
    for key, value in kwargs.items():
        _set(main, f'env.env_kwargs.{key}', value, 'env.env_id')
        notices.append(f"DI-engine's {f'env id {given!r}' if given else f'env type {env_type!r}'} sets "
                       f"env.env_kwargs.{key}={value!r}")


def _is_ding_module(name: Any) -> bool:
    return isinstance(name, str) and name.split('.')[0] in DING_PACKAGES


# ----- model ---------------------------------------------------------------------------------------
def _translate_model(main: dict, create: dict, model_accepts: ModelAccepts, notices: list[str]) -> None:
    model = _get(main, 'policy.model')
    if not isinstance(model, dict):
        return
    if model.get('action_space') in _QAC_ACTION_SPACES:
        value = model.pop('action_space')
        notices.append(f"ignored DI-engine key 'policy.model.action_space' ({value!r}): it names DI-engine's QAC "
                       f"actor head; tidal's SAC actor is always a reparameterized tanh-Gaussian")
    given = {key: model[key] for key in _MODEL_SIZE_KEYS if key in model}
    if not given:
        return
    policy_type = _get(create, 'policy.type') or _get(main, 'policy.type') or ''
    policy = dict(main.get('policy') or {})
    policy['import_names'] = list(_get(create, 'policy.import_names') or []) + list(policy.get('import_names') or [])
    accepted = model_accepts(policy_type, policy)
    sizes = _model_sizes(given, accepted)
    if sizes is None:
        return  # the model takes these keys itself (or any keys): leave them to it
    for key in given:
        del model[key]
    for path, value in sizes.items():
        if path in model and model[path] != value:
            raise ConfigError(f"policy.model.{path} is set and so is DI-engine's {', '.join(given)}, which give "
                              f"{value!r}; keep one of them")
        model[path] = value
    for key, value in given.items():
        fed = [path for path in sizes if key == 'encoder_hidden_size_list' or path.startswith(key.split('_')[0])]
        done = ' and '.join(f"'policy.model.{path}' = {sizes[path]!r}" for path in fed or sizes)
        notices.append(f"DI-engine key 'policy.model.{key}' ({value!r}) is part of {done}: {SIZES_WHY}")


def _model_sizes(given: dict, accepted: Optional[frozenset]) -> Optional[dict]:
    """tidal's hidden sizes for DI-engine's head layout: an encoder (`encoder_hidden_size_list`, absent in
    QAC) feeding a head of `hidden_size` with `layer_num` more layers of that size; QAC has one input layer
    of the head's size instead of an encoder. None when the model takes DI-engine's own keys."""
    if accepted is None or any(key in accepted for key in given):
        return None
    sizes = {**_HEAD_DEFAULTS, **given}
    for key in ('actor_head_hidden_size', 'critic_head_hidden_size', 'actor_head_layer_num', 'critic_head_layer_num'):
        _check_int(key, sizes[key], minimum=1 if key.endswith('size') else 0)
    encoder = given.get('encoder_hidden_size_list')
    if encoder is not None and not (isinstance(encoder, (list, tuple))
                                    and all(isinstance(size, int) and size > 0 for size in encoder)):
        raise ConfigError(f"config key 'policy.model.encoder_hidden_size_list' must be a list of ints > 0, "
                          f"got {encoder!r}")

    def layers(role: str, default_encoder: Optional[list]) -> list[int]:
        hidden, extra = sizes[f'{role}_head_hidden_size'], sizes[f'{role}_head_layer_num']
        trunk = list(encoder) if encoder is not None else default_encoder
        return (trunk if trunk is not None else [hidden]) + [hidden] * extra

    if 'actor_hidden_sizes' in accepted and 'critic_hidden_sizes' in accepted:
        return {'actor_hidden_sizes': layers('actor', None), 'critic_hidden_sizes': layers('critic', None)}
    if 'encoder_hidden_sizes' in accepted:
        actor = layers('actor', _VAC_ENCODER_DEFAULT)
        critic = layers('critic', _VAC_ENCODER_DEFAULT)
        if critic != actor:
            raise ConfigError(f"DI-engine's critic layout {critic} differs from its actor layout {actor}; tidal's "
                              f"actor_critic gives both the same encoder_hidden_sizes: make the critic_head_* keys "
                              f"equal to the actor_head_* ones")
        return {'encoder_hidden_sizes': actor}
    return None


def _check_int(key: str, value: Any, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"config key 'policy.model.{key}' must be an int >= {minimum}, got {value!r}")


# ----- dotted paths ------------------------------------------------------------------------------------
def _get(tree: Any, path: str) -> Any:
    node = tree
    for key in path.split('.'):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _has(tree: Any, path: str) -> bool:
    return _pop(tree, path, dry_run=True)[0]


def _pop(tree: dict, path: str, dry_run: bool = False) -> tuple[bool, Any]:
    """(found, value) at `path`; removes it, and any section it leaves empty, unless `dry_run`."""
    keys = path.split('.')
    trail = [tree]
    for key in keys[:-1]:
        node = trail[-1].get(key)
        if not isinstance(node, dict):
            return False, None
        trail.append(node)
    if keys[-1] not in trail[-1]:
        return False, None
    if dry_run:
        return True, trail[-1][keys[-1]]
    value = trail[-1].pop(keys[-1])
    for depth in range(len(keys) - 1, 0, -1):
        if trail[depth]:
            break
        del trail[depth - 1][keys[depth - 1]]
    return True, value


def _set(tree: dict, path: str, value: Any, source: str) -> None:
    keys = path.split('.')
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"DI-engine key '{source}' goes to '{path}', but '{key}' there is not a mapping")
    if keys[-1] in node and node[keys[-1]] != value:
        raise ConfigError(f"config key '{path}' is {node[keys[-1]]!r} but DI-engine's '{source}' sets it to "
                          f"{value!r}; keep one of them")
    node[keys[-1]] = value
