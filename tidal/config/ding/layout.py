"""DI-engine's model layouts as tidal's model keys, for the model the policy will build.

DI-engine describes its networks by head layouts (`actor_head_hidden_size`, `critic_head_layer_num`, ...) and
an encoder list; tidal's QAC and actor-critic models take hidden-size lists instead, and its `dqn` model reads
DI-engine's DQN keys themselves. Where a key goes depends on the model's arguments, so `translate_model` asks
(`ModelAccepts`); torch activation modules become tidal's activation names here too.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from tidal.base.errors import ConfigError
from tidal.config.ding.report import LEFT_OUT, DingMapping, became
from tidal.config.ding.tables import (ACTIVATIONS, DDPG_FAMILY, DING_CONV_KERNELS, DING_CONV_STRIDES,
                                      DING_HEAD_DEFAULTS, SIZES_WHY)
from tidal.config.tree import value_at

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
#: The policies whose continuous actor is deterministic (DI-engine's 'regression' head).
_DETERMINISTIC_ACTORS = (*DDPG_FAMILY, 'bc')
_ACTOR_PATHS = ('actor_hidden_sizes', 'encoder_hidden_sizes')
_CRITIC_PATHS = ('critic_hidden_sizes', 'value_encoder_hidden_sizes', 'value_hidden_sizes')
#: DI-engine's layout key -> tidal's hidden-size keys it is part of (where the model has them).
_FED_BY = {'encoder_hidden_size_list': _ACTOR_PATHS + _CRITIC_PATHS, 'actor_head_hidden_size': _ACTOR_PATHS,
           'actor_head_layer_num': _ACTOR_PATHS, 'critic_head_hidden_size': _CRITIC_PATHS,
           'critic_head_layer_num': _CRITIC_PATHS}

ModelAccepts = Callable[[str, dict], Optional[frozenset]]


def _qac_actor_head(model: dict, family: frozenset, mapping: DingMapping) -> None:
    """DI-engine's QAC `action_space` names its actor head: the one tidal's policy has is dropped (a
    reparameterized tanh-Gaussian for SAC, a deterministic tanh action for DDPG and TD3), another refused."""
    head = model['action_space']
    deterministic = not family.isdisjoint(_DETERMINISTIC_ACTORS)
    wanted, actor = ('regression', 'a deterministic tanh action') if deterministic else \
        ('reparameterization', 'a reparameterized tanh-Gaussian')
    if head == 'hybrid' or (head != wanted and deterministic):
        raise ConfigError(f"config key 'policy.model.action_space' is {head!r}: tidal's {mapping.policy_type} "
                          f"actor is {actor} ({wanted!r})")
    mapping.add('policy.model.action_space', model.pop('action_space'), 'ignored', "it names DI-engine's QAC "
                f"actor head; tidal's {mapping.policy_type} actor is always {actor}", ignored=True)


def policy_section(main: dict, create: dict) -> dict:
    """main_config's policy section with create_config's import names too: what names the policy's class."""
    policy = dict(main['policy']) if isinstance(main.get('policy'), dict) else {}
    names = [value_at(create, 'policy.import_names'), policy.get('import_names')]
    policy['import_names'] = [name for found in names if isinstance(found, list) for name in found]
    return policy


def translate_model(main: dict, create: dict, model_accepts: ModelAccepts, family: frozenset,
                     mapping: DingMapping) -> None:
    model = value_at(main, 'policy.model')
    if not isinstance(model, dict):
        return
    if model.get('action_space') in _QAC_ACTION_SPACES:
        _qac_actor_head(model, family, mapping)
    if 'activation' in model and not isinstance(model['activation'], str):
        given = model['activation']
        model['activation'] = _activation_name(given)
        mapping.add('policy.model.activation', given, became({'policy.model.activation': model['activation']}),
                    "tidal's models take an activation by name")
    # DI-engine's env type, import names or torch modules, translated above, mark a DI-engine file
    ding_file = bool(mapping.notes)
    given = {key: model[key] for key in _MODEL_SIZE_KEYS if key in model}
    if not given and not any(note.key == 'env.type' for note in mapping.notes):
        return  # a tidal config: its model keeps tidal's defaults
    accepted = model_accepts(mapping.policy_type, policy_section(main, create))
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
    defaults = {**(_PPG_HEAD_DEFAULTS if 'ppg' in family else _HEAD_DEFAULTS),
                **DING_HEAD_DEFAULTS.get(mapping.policy_type, {})}
    sizes = _model_sizes(given, accepted, model.get('share_encoder'), defaults, image)
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
                    became({f'policy.model.{path}': sizes[path] for path in _CONV_KEYS}), _CONV_WHY)
    if not given:
        mapping.add('policy.model (layout)', LEFT_OUT, became({f'policy.model.{path}': value
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
                    became({f'policy.model.{path}': value for path, value in conv.items()}), _CONV_WHY)


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
                 defaults: dict, image: bool = False) -> Optional[dict]:
    """tidal's hidden sizes for DI-engine's head layout: an encoder (`encoder_hidden_size_list`, absent in
    QAC) feeding a head of `hidden_size` with `layer_num` more layers of that size; QAC has one input layer
    of the head's size instead of an encoder. For `image` observations the encoder is DI-engine's
    ConvEncoder: conv layers of the list's first sizes, then one linear layer of its last. `defaults` are
    DI-engine's for the keys left out. None when the model takes DI-engine's own keys."""
    if accepted is None or any(key in accepted for key in given):
        return None
    sizes = {**defaults, **given}
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
        critics = {'critic_hidden_sizes': layers('critic', None)}
        if 'value_hidden_sizes' in accepted:  # IQL's state-value network, a critic head in DI-engine's model
            critics['value_hidden_sizes'] = critics['critic_hidden_sizes']
        return {'actor_hidden_sizes': layers('actor', None), **critics}
    if 'actor_hidden_sizes' in accepted:  # an actor alone (BC)
        return {'actor_hidden_sizes': layers('actor', None)}
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
