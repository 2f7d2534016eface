"""Snapshot a gymnasium env's state as plain data and put it back, so a resumed run continues mid-episode.

A snapshot is built only of what `torch.load(weights_only=True)` reads back without running code:
str-keyed dicts, lists, str, int, float, bool, None and tensors. numpy arrays and scalars, dtypes,
tuples, deques and random generators are written in a tagged form that restores the same Python types.
Each wrapper layer is snapshot on its own, so the time-limit counter and the other wrapper counters
come back along with the physics state and the env's `np_random`. A layer whose state lives in a native
object (MuJoCo's physics data, the Atari emulator) adds that state, saved by its library (`native_state.py`).
"""
from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium
import numpy as np
import torch

from tidal.base.errors import TidalError
from tidal.envs.native_state import NativeState, native_state

# Instance attributes that are not episode state, skipped on every layer.
_NOT_STATE = frozenset({
    'env',                                       # the next layer down, snapshot as a layer of its own
    'spec', '_cached_spec',                      # gymnasium's registration record, fixed by gymnasium.make
    'metadata', '_metadata',                     # render modes and fps: facts about the class
    'render_mode',                               # chosen when the env is made
    'observation_space', '_observation_space',   # spaces are chosen when the env is made and
    'action_space', '_action_space',             # their samplers do not drive the env's dynamics
    '_saved_kwargs',                             # a wrapper's constructor arguments, kept to re-make it
    'func',                                      # a transform wrapper's function: code, not data
})
# Human-rendering handles: skipped while rendering is off (None). A live window is not plain data,
# so a set handle is refused like any other attribute.
_RENDER_HANDLES = frozenset({'screen', 'clock', 'viewer', 'window', 'surf'})

_TAGS = frozenset({'__ndarray__', '__npscalar__', '__dtype__', '__scalar_type__', '__tuple__', '__deque__',
                   '__generator__'})
_BIT_GENERATORS = {cls.__name__: cls for cls in (np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937,
                                                  np.random.Philox, np.random.SFC64)}


class EnvSnapshotError(TidalError):
    """An env holds state that is not plain data, or a snapshot was taken of a differently wrapped env."""


class Snapshottable(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """The outermost wrapper: exposes the state below it as attributes, so that vector envs read and
    write it with `get_attr` / `set_attr`, in this process and in worker processes alike."""

    def __init__(self, env: gymnasium.Env) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        gymnasium.Wrapper.__init__(self, env)

    @property
    def snapshot_state(self) -> dict | EnvSnapshotError:
        """The snapshot of the env below, or the EnvSnapshotError saying why there is none.

        The error is returned, not raised: an exception inside an AsyncVectorEnv worker ends the worker.
        """
        try:
            return snapshot_env(self.env)
        except EnvSnapshotError as err:
            return err

    @snapshot_state.setter
    def snapshot_state(self, snapshot: dict) -> None:
        restore_env(self.env, snapshot)

    @property
    def snapshot_layers(self) -> list[str]:
        """Class names of the layers below, to check a snapshot fits before sending it to a worker."""
        return layer_classes(self.env)


def snapshot_env(env: gymnasium.Env) -> dict:
    """`{'layers': [{'class': name, 'state': {attribute: value}}, ...]}`, outermost layer first; a layer with
    a native object also holds `'native'`, that object's state."""
    return {'layers': [_snapshot_layer(layer) for layer in _layers(env)]}


def restore_env(env: gymnasium.Env, snapshot: dict) -> None:
    """Set every layer's attributes (and native state) back to `snapshot`; nothing is changed if it does not fit."""
    layers = _layers(env)
    check_fits(snapshot, [type(layer).__name__ for layer in layers])
    states = [{name: _decode(value) for name, value in saved['state'].items()} for saved in snapshot['layers']]
    natives = [_native_to_load(layer, saved) for layer, saved in zip(layers, snapshot['layers'])]
    for layer, state, native in zip(layers, states, natives):
        if native is not None:
            handler, native_saved = native
            handler.load(layer, native_saved)
        for name, value in state.items():
            _assign(layer, name, value)


def layer_classes(env: gymnasium.Env) -> list[str]:
    """Class names of `env`'s wrapper chain, outermost first."""
    return [type(layer).__name__ for layer in _layers(env)]


def check_fits(snapshot: dict, classes: list[str]) -> None:
    """Raise EnvSnapshotError unless `snapshot` was taken of an env wrapped as `classes` (outermost first)."""
    saved = [layer['class'] for layer in snapshot['layers']]
    if saved != classes:
        raise EnvSnapshotError(f"a snapshot of {' > '.join(saved)} does not fit the env "
                               f"{' > '.join(classes)}")


def snapshot_space_rng(space: gymnasium.Space) -> list:
    """The states of the generators `space.sample()` draws from (its own, then its subspaces')."""
    return [_encode(generator.bit_generator.state) for generator in _space_generators(space)]


def restore_space_rng(space: gymnasium.Space, states: list) -> None:
    generators = _space_generators(space)
    if len(states) != len(generators):
        raise EnvSnapshotError(f'the action-space snapshot holds {len(states)} generators, '
                               f'the space {space} draws from {len(generators)}')
    for generator, state in zip(generators, states):
        generator.bit_generator.state = _decode(state)


def _layers(env: gymnasium.Env) -> list[gymnasium.Env]:
    layers = [env]
    while isinstance(layers[-1], gymnasium.Wrapper):
        layers.append(layers[-1].env)
    return layers


def _snapshot_layer(layer: gymnasium.Env) -> dict:
    native = native_state(layer)
    skipped = (_NOT_STATE | native.skipped) if native is not None else _NOT_STATE
    state = {}
    for name, value in vars(layer).items():
        if name in skipped or (name in _RENDER_HANDLES and value is None):
            continue
        try:
            state[name] = _encode(value)
        except _NotPlainData as err:
            raise EnvSnapshotError(f"{type(layer).__name__} cannot be snapshot: attribute '{name}' "
                                   f"holds {err}") from None
    saved = {'class': type(layer).__name__, 'state': state}
    if native is not None:
        saved['native'] = _encode(native.save(layer))
    return saved


def _native_to_load(layer: gymnasium.Env, saved: dict) -> tuple[NativeState, dict] | None:
    """The layer's NativeState and the decoded native state to load with it; raises if they do not fit."""
    native = native_state(layer)
    if native is None and 'native' not in saved:
        return None
    if native is None or 'native' not in saved:
        raise EnvSnapshotError(f"the snapshot of {type(layer).__name__} {'lacks' if native else 'holds'} the "
                               f"state of a native object (physics data, emulator) that the env "
                               f"{'holds' if native else 'lacks'}")
    state = _decode(saved['native'])
    why = native.mismatch(layer, state)
    if why is not None:
        raise EnvSnapshotError(f'the snapshot of {type(layer).__name__} does not fit the env: {why}')
    return native, state


def _assign(layer: gymnasium.Env, name: str, value: Any) -> None:
    current = vars(layer).get(name)
    if (isinstance(value, np.random.Generator) and isinstance(current, np.random.Generator)
            and type(current.bit_generator) is type(value.bit_generator)):
        current.bit_generator.state = value.bit_generator.state  # in place: anything sharing it stays in step
    else:
        setattr(layer, name, value)


def _space_generators(space: gymnasium.Space) -> list[np.random.Generator]:
    generators = [space.np_random]
    subspaces = getattr(space, 'spaces', None)  # Dict holds a dict, Tuple and OneOf a tuple
    if isinstance(subspaces, dict):
        subspaces = list(subspaces.values())
    for subspace in subspaces or ():
        generators += _space_generators(subspace)
    return generators


def encode_plain(value: Any) -> Any:
    """`value` (numpy arrays, scalars, generators, containers of them) as plain data a checkpoint holds."""
    return _encode(value)


def decode_plain(data: Any) -> Any:
    """The value `encode_plain` gave `data` for."""
    return _decode(data)


class _NotPlainData(Exception):
    """A value (possibly nested) that has no plain-data form; its message describes the value."""


def _encode(value: Any) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is np.ndarray:
        return {'__ndarray__': _tensor(value), 'dtype': value.dtype.name}
    if isinstance(value, np.generic):
        return {'__npscalar__': _tensor(np.asarray(value)), 'dtype': value.dtype.name}
    if isinstance(value, np.dtype):
        return {'__dtype__': _encode_dtype(value)}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {'__scalar_type__': _encode_dtype(np.dtype(value))}
    if isinstance(value, np.random.Generator):
        return {'__generator__': _encode(value.bit_generator.state)}
    if type(value) is list:
        return [_encode(item) for item in value]
    if type(value) is tuple:
        return {'__tuple__': [_encode(item) for item in value]}
    if type(value) is deque:
        return {'__deque__': [_encode(item) for item in value], 'maxlen': value.maxlen}
    if type(value) is dict and all(type(key) is str and key not in _TAGS for key in value):
        return {key: _encode(item) for key, item in value.items()}
    raise _NotPlainData(_a(type(value).__name__))


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if '__ndarray__' in data:
        return np.array(data['__ndarray__'].numpy(), dtype=np.dtype(data['dtype']))
    if '__npscalar__' in data:
        return np.array(data['__npscalar__'].numpy(), dtype=np.dtype(data['dtype']))[()]
    if '__dtype__' in data:
        return np.dtype(data['__dtype__'])
    if '__scalar_type__' in data:
        return np.dtype(data['__scalar_type__']).type
    if '__tuple__' in data:
        return tuple(_decode(item) for item in data['__tuple__'])
    if '__deque__' in data:
        return deque((_decode(item) for item in data['__deque__']), maxlen=data['maxlen'])
    if '__generator__' in data:
        state = _decode(data['__generator__'])
        if state['bit_generator'] not in _BIT_GENERATORS:
            raise EnvSnapshotError(f"unknown bit generator {state['bit_generator']!r} in a snapshot; "
                                   f"expected one of {sorted(_BIT_GENERATORS)}")
        generator = np.random.Generator(_BIT_GENERATORS[state['bit_generator']]())
        generator.bit_generator.state = state
        return generator
    return {key: _decode(item) for key, item in data.items()}


def _tensor(array: np.ndarray) -> torch.Tensor:
    """A copy of `array` as a tensor of the same dtype; numpy dtypes torch lacks are not plain data."""
    try:
        if _dtype_name(array.dtype) is not None:
            return torch.from_numpy(np.array(array, order='C'))
    except TypeError:
        pass
    raise _NotPlainData(f'numpy array of dtype {array.dtype}')


def _dtype_name(dtype: np.dtype) -> str | None:
    """A name that gives back exactly `dtype`; byte-swapped, text and structured dtypes have none."""
    try:
        return dtype.name if np.dtype(dtype.name) == dtype else None
    except TypeError:
        return None


def _encode_dtype(dtype: np.dtype) -> str:
    name = _dtype_name(dtype)
    if name is None:
        raise _NotPlainData(f'numpy dtype {dtype}')
    return name


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
