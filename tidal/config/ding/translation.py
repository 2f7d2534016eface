"""DI-engine configs as they are: its env types, key names and options, turned into tidal's before checking.

`translate` applies the tables of `tables` (`ENV_TYPES`: DI-engine env type -> tidal's env; `KEY_RULES`:
DI-engine key path -> renamed, converted or ignored, and why, for the policy types a rule names and their
registered subclasses) to the user's main_config and create_config, and records each thing it did in a
`DingMapping`. Keys in neither table are left for the strict checks, which reject unknown ones with a
did-you-mean. DI-engine's model layout (`actor_head_hidden_size`, ...) and its torch activation modules become
tidal's hidden-size lists and activation names here, since where they go depends on the model the policy builds.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional

from tidal.base.errors import ConfigError
from tidal.config.ding.report import LEFT_OUT, DingMapping
from tidal.config.ding.tables import (ACTIVATIONS, DDPG_FAMILY, DING_CONV_KERNELS, DING_CONV_STRIDES, ENV_TYPES,
                                      KEY_RULES, MPE_IDS, MUJOCO_ID, MUJOCO_OBS, OLD_ENV_IDS, PETTING_ZOO_KEYS,
                                      POLICY_TYPES_REFUSED, SIZES_WHY, KeyRule)
from tidal.config.tree import value_at

#: Packages of DI-engine itself; import names under them are dropped (tidal never imports DI-engine).
DING_PACKAGES = ('ding', 'dizoo')

_MODEL_SIZE_KEYS = ('encoder_hidden_size_list', 'actor_head_hidden_size', 'actor_head_layer_num',
                    'critic_head_hidden_size', 'critic_head_layer_num')
#: DI-engine's defaults of its head layout (QAC / DiscreteQAC / VAC / PPG), for the keys a config leaves out.
_HEAD_DEFAULTS = {'actor_head_hidden_size': 64, 'actor_head_layer_num': 1, 'critic_head_hidden_size': 64,
                  'critic_head_layer_num': 1}
_PPG_HEAD_DEFAULTS = {**_HEAD_DEFAULTS, 'actor_head_layer_num': 2}
_VAC_ENCODER_DEFAULT = [128, 128, 64]
#: The arguments of a model that takes DI-engine's DQN keys itself (tidal's 'dqn': DQN, SQL, SQIL).
_DQN_KEYS = frozenset({'encoder_hidden_size_list', 'head_hidden_size', 'head_layer_num', 'dueling'})
_DQN_ENCODER_DEFAULT = [128, 128, 64]
_DQN_HEAD_WHY = ("DI-engine's DQN default: one hidden layer (of head_hidden_size, with the activation) in each branch "
                 "of its head before the output layer; tidal's dqn model has none unless told")
_CONV_WHY = ("DI-engine's ConvEncoder: its first sizes are the channels of 8x8/4, 4x4/2 and 3x3/1 conv layers (tidal's "
             "encoder also puts a ReLU after its linear layer); DI-engine's Atari env scales pixels to [0, 1], tidal's "
             "model does")
#: DI-engine's ConvEncoder default, for image observations.
_CONV_ENCODER_DEFAULT = [32, 64, 64, 128]
_CONV_KEYS = ('conv_channels', 'conv_kernel_sizes', 'conv_strides', 'pixel_scale')
#: DI-engine's QAC `action_space` values, which name its actor head rather than the env's action space.
_QAC_ACTION_SPACES = ('reparameterization', 'regression', 'hybrid')
_ACTOR_PATHS = ('actor_hidden_sizes', 'encoder_hidden_sizes')
_CRITIC_PATHS = ('critic_hidden_sizes', 'value_encoder_hidden_sizes')
#: DI-engine's layout key -> tidal's hidden-size keys it is part of (where the model has them).
_FED_BY = {'encoder_hidden_size_list': _ACTOR_PATHS + _CRITIC_PATHS, 'actor_head_hidden_size': _ACTOR_PATHS,
           'actor_head_layer_num': _ACTOR_PATHS, 'critic_head_hidden_size': _CRITIC_PATHS,
           'critic_head_layer_num': _CRITIC_PATHS}
_DONE_DROPPED = 'checked, then dropped (it asks for what tidal does)'

ModelAccepts = Callable[[str, dict], Optional[frozenset]]
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
    family = policy_family(policy_type, _policy_section(main, create))
    _translate_model(main, create, model_accepts, family, mapping)
    for rule in KEY_RULES:
        if rule.action == 'same' or rule.convert is None and rule.action == 'convert' or not rule.holds_for(family):
            continue  # layouts and activations: _translate_model; other policies' keys: the strict checks
        found, value = _pop(main, rule.path, dry_run=True)
        if found:
            _apply(main, original, rule, value, mapping)
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
        mapping.add(rule.path, value, _became(updates), rule.why)
    else:
        mapping.add(rule.path, value, _DONE_DROPPED, rule.why, ignored=True)


def _became(updates: dict) -> str:
    return '-> ' + ', '.join(f"'{path}' = {new!r}" for path, new in updates.items())


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
            translated = _petting_zoo_env(main, mapping) if env_type == 'petting_zoo' else \
                _gym_env(env_type, main, mapping)
            for env_section in (env, create.get('env')):
                if isinstance(env_section, dict) and 'type' in env_section:
                    env_section['type'] = ENV_TYPES[env_type].tidal_type
            mapping.add('env.type', env_type, _became({'env.type': ENV_TYPES[env_type].tidal_type, **translated}),
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


# ----- model ---------------------------------------------------------------------------------------
def _qac_actor_head(model: dict, family: frozenset, mapping: DingMapping) -> None:
    """DI-engine's QAC `action_space` names its actor head: the one tidal's policy has is dropped (a
    reparameterized tanh-Gaussian for SAC, a deterministic tanh action for DDPG and TD3), another refused."""
    head = model['action_space']
    deterministic = not family.isdisjoint(DDPG_FAMILY)
    wanted, actor = ('regression', 'a deterministic tanh action') if deterministic else \
        ('reparameterization', 'a reparameterized tanh-Gaussian')
    if head == 'hybrid' or (head != wanted and deterministic):
        raise ConfigError(f"config key 'policy.model.action_space' is {head!r}: tidal's {mapping.policy_type} "
                          f"actor is {actor} ({wanted!r})")
    mapping.add('policy.model.action_space', model.pop('action_space'), 'ignored', "it names DI-engine's QAC "
                f"actor head; tidal's {mapping.policy_type} actor is always {actor}", ignored=True)


def _policy_section(main: dict, create: dict) -> dict:
    """main_config's policy section with create_config's import names too: what names the policy's class."""
    policy = dict(main['policy']) if isinstance(main.get('policy'), dict) else {}
    names = [value_at(create, 'policy.import_names'), policy.get('import_names')]
    policy['import_names'] = [name for found in names if isinstance(found, list) for name in found]
    return policy


def _translate_model(main: dict, create: dict, model_accepts: ModelAccepts, family: frozenset,
                     mapping: DingMapping) -> None:
    model = value_at(main, 'policy.model')
    if not isinstance(model, dict):
        return
    if model.get('action_space') in _QAC_ACTION_SPACES:
        _qac_actor_head(model, family, mapping)
    if 'activation' in model and not isinstance(model['activation'], str):
        given = model['activation']
        model['activation'] = _activation_name(given)
        mapping.add('policy.model.activation', given, _became({'policy.model.activation': model['activation']}),
                    "tidal's models take an activation by name")
    # DI-engine's env type, import names or torch modules, translated above, mark a DI-engine file
    ding_file = bool(mapping.notes)
    given = {key: model[key] for key in _MODEL_SIZE_KEYS if key in model}
    if not given and not any(note.key == 'env.type' for note in mapping.notes):
        return  # a tidal config: its model keeps tidal's defaults
    accepted = model_accepts(mapping.policy_type, _policy_section(main, create))
    dqn = accepted is not None and _DQN_KEYS <= accepted
    if dqn and not ding_file:
        return  # a tidal config of the DQN family, whose model's own keys are DI-engine's names
    if accepted is not None and 'activation' in accepted and 'activation' not in model:
        model['activation'] = 'relu'
        mapping.add('policy.model.activation', LEFT_OUT, "-> 'policy.model.activation' = 'relu'",
                    "DI-engine's models default to nn.ReLU()")
    image = (value_at(main, 'env.type') or value_at(create, 'env.type')) == 'atari'
    if dqn:
        _dqn_layout(model, image, mapping)
        return
    sizes = _model_sizes(given, accepted, model.get('share_encoder'), 'ppg' in family, image)
    if sizes is None:
        return  # the model takes these keys itself (or any keys): leave them to it
    for key in given:
        del model[key]
    for path, value in sizes.items():
        if path in model and model[path] != value:
            raise ConfigError(f"policy.model.{path} is set and so is DI-engine's {', '.join(given)}, which give "
                              f"{value!r}; keep one of them")
        model[path] = value
    if sizes.get('share_encoder') is True:
        mapping.add('policy.model.share_encoder', LEFT_OUT, "-> 'policy.model.share_encoder' = True",
                    "DI-engine's VAC and PPG models share their encoder unless told otherwise")
    layouts = {path: value for path, value in sizes.items() if path not in ('share_encoder', *_CONV_KEYS)}
    if 'conv_channels' in sizes:
        mapping.add('policy.model.encoder_hidden_size_list (conv)', given.get('encoder_hidden_size_list', LEFT_OUT),
                    _became({f'policy.model.{path}': sizes[path] for path in _CONV_KEYS}), _CONV_WHY)
    if not given:
        mapping.add('policy.model (layout)', LEFT_OUT, _became({f'policy.model.{path}': value
                                                                     for path, value in layouts.items()}),
                    "DI-engine's default layout of the model, as DI-engine builds it")
    for key, value in given.items():
        fed = [path for path in layouts if path in _FED_BY[key]] or list(layouts)
        done = ' and '.join(f"'policy.model.{path}' = {layouts[path]!r}" for path in fed)
        mapping.add(f'policy.model.{key}', value, f'-> part of {done}', SIZES_WHY)


def _dqn_layout(model: dict, image: bool, mapping: DingMapping) -> None:
    """DI-engine's DQN layout in a DI-engine file, for tidal's model that reads DI-engine's DQN keys itself: the
    head's hidden layer that DI-engine's default head_layer_num gives (tidal's default has none), and on images
    DI-engine's ConvEncoder (tidal's conv keys) of the list's first sizes; the list's last stays the linear layer's."""
    if 'head_layer_num' not in model:
        model['head_layer_num'] = 1
        mapping.add('policy.model.head_layer_num', LEFT_OUT, "-> 'policy.model.head_layer_num' = 1", _DQN_HEAD_WHY)
    if image and not any(key in model for key in _CONV_KEYS):
        given = model.get('encoder_hidden_size_list', LEFT_OUT)
        conv = _conv_encoder(_DQN_ENCODER_DEFAULT if given is LEFT_OUT else _checked_sizes(given))
        model.update(conv)
        mapping.add('policy.model.encoder_hidden_size_list (conv)', given,
                    _became({f'policy.model.{path}': value for path, value in conv.items()}), _CONV_WHY)


def _conv_encoder(channels: list[int]) -> dict:
    """tidal's conv keys for DI-engine's ConvEncoder of `channels` (its encoder_hidden_size_list)."""
    if not len(DING_CONV_KERNELS) <= len(channels) <= len(DING_CONV_KERNELS) + 1:
        raise ConfigError(f"config key 'policy.model.encoder_hidden_size_list' is {channels!r}: tidal builds "
                          f"DI-engine's ConvEncoder of {len(DING_CONV_KERNELS)} conv layers and one linear "
                          f"layer (3 or 4 sizes), without residual blocks")
    return {'conv_channels': channels[:len(DING_CONV_KERNELS)], 'conv_kernel_sizes': list(DING_CONV_KERNELS),
            'conv_strides': list(DING_CONV_STRIDES), 'pixel_scale': 1 / 255}


def _checked_sizes(value: Any) -> list[int]:
    if not (isinstance(value, (list, tuple)) and all(isinstance(size, int) and size > 0 for size in value)):
        raise ConfigError(f"config key 'policy.model.encoder_hidden_size_list' must be a list of ints > 0, "
                          f"got {value!r}")
    return list(value)


def _activation_name(value: Any) -> str:
    """tidal's name of a torch.nn activation, given as a module (nn.Tanh()) or a class (nn.Tanh)."""
    cls = value if isinstance(value, type) else type(value)
    if cls.__module__.startswith('torch.nn') and cls.__name__ in ACTIVATIONS:
        return ACTIVATIONS[cls.__name__]
    raise ConfigError(f"config key 'policy.model.activation' holds {value!r}; tidal's models take "
                      f"{', '.join(f'nn.{name}' for name in ACTIVATIONS)} (or their names: "
                      f"{', '.join(ACTIVATIONS.values())})")


def _model_sizes(given: dict, accepted: Optional[frozenset], share_encoder: Optional[bool],
                 ppg: bool, image: bool = False) -> Optional[dict]:
    """tidal's hidden sizes for DI-engine's head layout: an encoder (`encoder_hidden_size_list`, absent in
    QAC) feeding a head of `hidden_size` with `layer_num` more layers of that size; QAC has one input layer
    of the head's size instead of an encoder. For `image` observations the encoder is DI-engine's
    ConvEncoder: conv layers of the list's first sizes, then one linear layer of its last. None when the
    model takes DI-engine's own keys."""
    if accepted is None or any(key in accepted for key in given):
        return None
    sizes = {**(_PPG_HEAD_DEFAULTS if ppg else _HEAD_DEFAULTS), **given}
    for key in ('actor_head_hidden_size', 'critic_head_hidden_size', 'actor_head_layer_num', 'critic_head_layer_num'):
        _check_int(key, sizes[key], minimum=1 if key.endswith('size') else 0)
    encoder = given.get('encoder_hidden_size_list')
    if encoder is not None:
        encoder = _checked_sizes(encoder)

    conv: dict = {}
    if image and 'conv_channels' in accepted:
        channels = encoder if encoder is not None else list(_CONV_ENCODER_DEFAULT)
        conv = _conv_encoder(channels)
        encoder = channels[-1:]

    def layers(role: str, default_encoder: Optional[list]) -> list[int]:
        hidden, extra = sizes[f'{role}_head_hidden_size'], sizes[f'{role}_head_layer_num']
        trunk = list(encoder) if encoder is not None else default_encoder
        return (trunk if trunk is not None else [hidden]) + [hidden] * extra

    if 'actor_hidden_sizes' in accepted and 'critic_hidden_sizes' in accepted:
        return {'actor_hidden_sizes': layers('actor', None), 'critic_hidden_sizes': layers('critic', None)}
    if 'encoder_hidden_sizes' in accepted:
        actor, critic = layers('actor', _VAC_ENCODER_DEFAULT), layers('critic', _VAC_ENCODER_DEFAULT)
        result: dict = {**conv, 'encoder_hidden_sizes': actor}
        if share_encoder is None:
            share_encoder = result['share_encoder'] = True  # DI-engine's VAC and PPG default
        if critic != actor:
            if share_encoder:
                raise ConfigError(f"DI-engine's critic layout {critic} differs from its actor layout {actor} on a "
                                  f"shared encoder (policy.model.share_encoder, True by default in DI-engine); tidal's "
                                  f"shared encoder has one layout: set share_encoder=False or make the critic_head_* "
                                  f"keys equal to the actor_head_* ones")
            result['value_encoder_hidden_sizes'] = critic
        return result
    return None


def _check_int(key: str, value: Any, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"config key 'policy.model.{key}' must be an int >= {minimum}, got {value!r}")


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
