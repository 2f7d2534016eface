"""DI-engine configs as they are: its env types, key names and options, turned into tidal's before checking.

`translate` applies the tables of `tables` (`ENV_TYPES`: DI-engine env type -> tidal's env; `KEY_RULES`:
DI-engine key path -> renamed, converted or ignored, and why, for the policy types a rule names and their
registered subclasses) to the user's main_config and create_config, and records each thing it did in a
`DingMapping`. Keys in neither table are left for the strict checks, which reject unknown ones with a
did-you-mean. DI-engine's model layouts and torch activation modules go to `layout.translate_model`.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Callable

from tidal.base.errors import ConfigError
from tidal.config.ding.layout import ModelAccepts, policy_section, translate_model
from tidal.config.ding.report import LEFT_OUT, DingMapping, became
from tidal.config.ding.tables import (D4RL_ENVS, D4RL_ID, DING_DEFAULTS, ENV_TYPES, KEY_RULES, MINARI_PUBLISHED, MPE_IDS,
                                      MUJOCO_ID, MUJOCO_OBS, OLD_ENV_IDS, PETTING_ZOO_KEYS, POLICY_TYPES_REFUSED, KeyRule)
from tidal.config.tree import value_at

#: Packages of DI-engine itself; import names under them are dropped (tidal never imports DI-engine).
DING_PACKAGES = ('ding', 'dizoo')

_DONE_DROPPED = 'checked, then dropped (it asks for what tidal does)'

PolicyFamily = Callable[[str, dict], frozenset]


def translate(main: dict, create: dict, model_accepts: ModelAccepts,
              policy_family: PolicyFamily) -> tuple[dict, dict, DingMapping]:
    """(main, create, mapping): copies with DI-engine's env types, import names and keys turned into tidal's,
    and what was done to each. `model_accepts(policy_type, policy_section)` names the arguments of the model
    the policy will build (None: any), which decides where DI-engine's head sizes go;
    `policy_family(policy_type, policy_section)` the registered names of its class and its bases, which
    decide the rules that hold (a user's `MySAC(SACPolicy)` takes SAC's)."""
    original = copy.deepcopy(main)
    main, create = copy.deepcopy(main), copy.deepcopy(create)
    mapping = DingMapping()
    _translate_create(main, create, mapping)
    mapping.policy_type = policy_type = str(value_at(create, 'policy.type') or value_at(main, 'policy.type') or '')
    family = policy_family(policy_type, policy_section(main, create))
    translate_model(main, create, model_accepts, family, mapping)
    ding_file = any(note.key in ('env.type', 'create_config.env.import_names', 'create_config.policy.import_names')
                    for note in mapping.notes)
    for rule in KEY_RULES:
        if rule.action == 'same' or rule.convert is None and rule.action == 'convert' or not rule.holds_for(family) \
                or rule.ding_only and not ding_file:
            continue  # layouts and activations: _translate_model; other policies' keys: the strict checks
        found, value = _pop(main, rule.path, dry_run=True)
        if found:
            _apply(main, original, rule, value, mapping)
    if ding_file:  # its defaults where tidal's differ
        for path, value in DING_DEFAULTS.get(policy_type, {}).items():
            if not _has(main, path):
                _set(main, path, value, path)
                mapping.add(path, LEFT_OUT, became({path: value}), f"DI-engine's {policy_type} default")
    return main, create, mapping


def _apply(main: dict, original: dict, rule: KeyRule, value: Any, mapping: DingMapping) -> None:
    if rule.action == 'ignore':
        _pop(main, rule.path)
        mapping.add(rule.path, value, 'ignored', rule.why, ignored=True)
        return
    if rule.action == 'rename':
        updates = {rule.target: value}
    else:
        assert rule.convert is not None, f"KeyRule '{rule.path}' ({rule.action}) has no convert"
        converted = rule.convert(value, original)
        if converted is None:
            return  # a value tidal reads as it is
        updates = converted
    _pop(main, rule.path)
    for path, new in updates.items():
        _set(main, path, new, rule.path)
    if updates:
        mapping.add(rule.path, value, became(updates), rule.why)
    else:
        mapping.add(rule.path, value, _DONE_DROPPED, rule.why, ignored=True)


# ----- create_config and the env section -------------------------------------------------------------
def _translate_create(main: dict, create: dict, mapping: DingMapping) -> None:
    for section in ('env', 'policy'):
        names = value_at(create, f'{section}.import_names')
        if isinstance(names, list):
            kept = [name for name in names if not _is_ding_module(name)]
            instead = 'its env adapters make the env' if section == 'env' else 'its own policies are registered'
            for name in names:
                if name not in kept:
                    mapping.add(f'create_config.{section}.import_names', name, 'dropped',
                                f'a DI-engine module, which tidal does not import ({instead})', ignored=True)
            create[section]['import_names'] = kept
    policy_type = value_at(create, 'policy.type') or value_at(main, 'policy.type')
    if isinstance(policy_type, str) and policy_type in POLICY_TYPES_REFUSED:
        raise ConfigError(f"DI-engine policy type '{policy_type}' is not supported: "
                          f"{POLICY_TYPES_REFUSED[policy_type]}")
    manager = value_at(create, 'env_manager.type')
    if isinstance(create.get('env_manager'), dict) and 'cfg_type' in create['env_manager']:
        mapping.add('create_config.env_manager.cfg_type', create['env_manager'].pop('cfg_type'), 'ignored',
                    "DI-engine's name of the manager's config class; env_manager.type picks tidal's", ignored=True)
    if manager == 'async_subprocess':
        create['env_manager']['type'] = 'subprocess'
        mapping.add('create_config.env_manager.type', manager, "-> 'subprocess'", 'one process per env')
    elif manager == 'env_pool':
        create['env_manager']['type'] = 'envpool'
        mapping.add('create_config.env_manager.type', manager, "-> 'envpool'", "EnvPool's C++ envs (extra envpool)")
    if 'replay_buffer' in create:
        mapping.add('create_config.replay_buffer', create.pop('replay_buffer'), 'ignored', "tidal's replay buffer "
                    "is set by policy.priority and policy.other.replay_buffer", ignored=True)
    env_type = value_at(main, 'env.type') or value_at(create, 'env.type')  # main_config's wins, as in compile_config
    if env_type == 'atari':
        _atari_env(main, mapping)  # tidal's own type of the same name: its keys stay as they are
    elif isinstance(env_type, str) and env_type in ENV_TYPES:
        if ENV_TYPES[env_type].refused:
            raise ConfigError(f"DI-engine env type '{env_type}' (env.env_id {value_at(main, 'env.env_id')!r}) is not "
                              f"supported: {ENV_TYPES[env_type].note}")
        env = main.setdefault('env', {})
        if isinstance(env, dict):  # else the strict checks name the wrong type
            if env_type == 'petting_zoo':
                translated = _petting_zoo_env(main, mapping)
            elif env_type == 'd4rl':
                translated = _d4rl_env(main)
            else:
                translated = _gym_env(env_type, main, mapping)
            for env_section in (env, create.get('env')):
                if isinstance(env_section, dict) and 'type' in env_section:
                    env_section['type'] = ENV_TYPES[env_type].tidal_type
            mapping.add('env.type', env_type, became({'env.type': ENV_TYPES[env_type].tidal_type, **translated}),
                        ENV_TYPES[env_type].note)
    if value_at(create, 'policy.type') == 'sac' and (_has(main, 'policy.expert_random_collect_size')
                                                 or _has(main, 'policy.collect.model_path')):
        create['policy']['type'] = 'sqil_sac'
        mapping.add('create_config.policy.type', 'sac', "-> 'sqil_sac'", "DI-engine's SQIL config is policy type "
                    "'sac' with SQIL's expert keys (expert_random_collect_size, collect.model_path)")
    elif value_at(create, 'policy.type') == 'sql' and _has(main, 'policy.collect.model_path'):
        create['policy']['type'] = 'sqil'
        mapping.add('create_config.policy.type', 'sql', "-> 'sqil'", "DI-engine's discrete SQIL config is policy type "
                    "'sql' with its expert's checkpoint in collect.model_path (tidal's 'sqil' records the "
                    "demonstrations from a tidal checkpoint there)")


def _gym_env(env_type: str, main: dict, mapping: DingMapping) -> dict:
    """Sets env_id and env_kwargs of tidal's gym adapter for DI-engine's `env_type`; returns what it set."""
    env = main['env']
    given = env.get('env_id')
    if env_type == 'mujoco':
        if not given:
            raise ConfigError("DI-engine env type 'mujoco' needs env.env_id, e.g. 'Hopper-v3'")
        env_id, kwargs = MUJOCO_ID.sub(lambda match: f'{match.group(1)}-v5', given), {}
        old_obs = MUJOCO_OBS.get(env_id.split('-')[0])
        if old_obs is not None and value_at(main, 'policy.model.obs_shape') == old_obs[0]:
            _pop(main, 'policy.model.obs_shape')
            mapping.add('policy.model.obs_shape', old_obs[0], 'dropped: the env fills it in', old_obs[1],
                        ignored=True)
    else:
        env_id, kwargs = OLD_ENV_IDS.get(given, (given, {})) if given else \
            (ENV_TYPES[env_type].env_id, dict(ENV_TYPES[env_type].env_kwargs))
    env['env_id'] = env_id
    done = {'env.env_id': env_id}
    for key, value in kwargs.items():
        _set(main, f'env.env_kwargs.{key}', value, 'env.env_id')
        done[f'env.env_kwargs.{key}'] = value
    return done


def _d4rl_env(main: dict) -> dict:
    """D4RL's id (`hopper-medium-v2`) as gymnasium's env and the Minari dataset of the same env and level
    (`mujoco/hopper/medium-v0`), which must be on disk; returns what it set."""
    given = main['env'].get('env_id')
    match = D4RL_ID.fullmatch(given) if isinstance(given, str) else None
    if match is None or match['env'] not in D4RL_ENVS:
        raise ConfigError(f"DI-engine env type 'd4rl': env.env_id {given!r} is not a D4RL MuJoCo locomotion id "
                          f"(ENV-LEVEL-vN of {', '.join(D4RL_ENVS)}, e.g. 'hopper-medium-v2'), the datasets tidal "
                          f"maps to Minari's")
    data_path = value_at(main, 'policy.collect.data_path')
    if data_path not in (None, ''):
        raise ConfigError(f"config key 'policy.collect.data_path' is {data_path!r}: under DI-engine's env type 'd4rl' "
                          f"it is D4RL's download folder, which tidal does not read; remove it (tidal reads the "
                          f"Minari dataset of env.env_id {given!r})")
    dataset = f"mujoco/{match['env']}/{match['level']}-v0"
    root = Path(os.environ.get('MINARI_DATASETS_PATH') or Path.home() / '.minari' / 'datasets')
    if not (root / dataset).is_dir():
        get = (f"download it (minari download {dataset}) or build a local one (tidal build-datasets)"
               if match['level'] in MINARI_PUBLISHED else
               f"Minari publishes no {match['level']} level of {match['env']}; build a local one (tidal build-datasets)")
        raise ConfigError(f"D4RL dataset {given!r} (env.env_id) is the Minari dataset '{dataset}', which is not under "
                          f"Minari's root '{root}' (MINARI_DATASETS_PATH): {get}")
    _pop(main, 'policy.collect.data_path')
    done = {'env.env_id': f"{D4RL_ENVS[match['env']]}-v5", 'policy.collect.data_path': dataset}
    main['env']['env_id'] = done['env.env_id']
    _set(main, 'policy.collect.data_path', dataset, 'env.env_id')
    return done


def _atari_env(main: dict, mapping: DingMapping) -> None:
    """DI-engine's Atari frames are channel-first ([4, 84, 84]); tidal's are channel-last, and the env fills
    the shape in, so a channel-first `policy.model.obs_shape` is dropped."""
    shape = value_at(main, 'policy.model.obs_shape')
    if isinstance(shape, (list, tuple)) and len(shape) == 3 and shape[1] == shape[2] != shape[0]:
        _pop(main, 'policy.model.obs_shape')
        mapping.add('policy.model.obs_shape', shape, 'dropped: the env fills it in', ENV_TYPES['atari'].note,
                    ignored=True)


def _petting_zoo_env(main: dict, mapping: DingMapping) -> dict:
    """DI-engine's MPE simple_spread as tidal's 'pettingzoo' env type: mpe2's env, every agent rewarded by the
    team as DI-engine's env does. Returns what it set; the keys it drops are noted in `mapping`."""
    env = main['env']
    family, given = env.pop('env_family', None), env.pop('env_id', None)
    if family not in (None, 'mpe') or given not in (None, *MPE_IDS):
        raise ConfigError(f"DI-engine env type 'petting_zoo' builds only MPE's simple_spread; got env.env_family "
                          f"{family!r}, env.env_id {given!r}: use tidal's env type 'pettingzoo' with a PettingZoo "
                          f"module as env.env_id")
    n_agent, n_landmark = env.pop('n_agent', None), env.pop('n_landmark', None)
    if not isinstance(n_agent, int) or isinstance(n_agent, bool) or n_agent < 1:
        raise ConfigError(f"config key 'env.n_agent' must be an int >= 1 (DI-engine's petting_zoo env), got "
                          f"{n_agent!r}")
    if n_landmark is not None and n_landmark != n_agent:
        raise ConfigError(f"config key 'env.n_landmark' is {n_landmark!r} but env.n_agent is {n_agent}: "
                          f"{PETTING_ZOO_KEYS['env.n_landmark']}")
    if env.pop('agent_obs_only', False):
        raise ConfigError(f"config key 'env.agent_obs_only' is True: {PETTING_ZOO_KEYS['env.agent_obs_only']}")
    for path in ('env.agent_specific_global_state', 'policy.model.global_obs_shape'):
        found, value = _pop(main, path)
        if found:
            mapping.add(path, value, 'ignored', PETTING_ZOO_KEYS[path].split(': ', 1)[1], ignored=True)
    done: dict = {'env.env_id': MPE_IDS.get(given or '', 'mpe2.simple_spread_v3'), 'env.env_kwargs.N': n_agent}
    for key in ('max_cycles', 'continuous_actions'):
        if key in env:
            done[f'env.env_kwargs.{key}'] = env.pop(key)
    done.update({'env.team_reward': env.pop('team_reward', True), 'env.reward_scale': env.pop('reward_scale', 2.0)})
    for path, value in done.items():
        _set(main, path, value, 'env.type')
    return done


def _is_ding_module(name: Any) -> bool:
    return isinstance(name, str) and name.split('.')[0] in DING_PACKAGES


# ----- changing dotted paths (tidal.config.tree.value_at reads them) ------------------------------------
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
