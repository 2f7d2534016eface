"""Expert demonstrations: the mode that records them, and one columnar .npz file on disk.

Columns are the transition fields (`obs`, `action`, `reward`, `next_obs`, `terminated`, `truncated`)
of all episodes end to end; nested observations are stored as `obs.observation`-style keys. The
metadata says which env and spaces the data belongs to, so a run on another env is refused.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np
import torch

from tidal.base.errors import CheckpointError

if TYPE_CHECKING:
    from tidal.base.modes import CollectView, EvalMode, Timestep

FORMAT_VERSION = 1
_COLUMN_PREFIX = 'column:'


@dataclass
class Demos:
    columns: dict[str, Any]   # nested dict of tensors, leading dim = all transitions
    metadata: dict[str, Any]

    def __len__(self) -> int:
        return int(sum(self.metadata['episode_lengths']))


def _flatten(tree: Mapping[str, Any], prefix: str = '') -> dict[str, np.ndarray]:
    flat: dict[str, np.ndarray] = {}
    for key, value in tree.items():
        name = f'{prefix}{key}'
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f'{name}.'))
        else:
            flat[name] = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
    return flat


def _unflatten(flat: Mapping[str, np.ndarray]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, value in flat.items():
        *parents, leaf = name.split('.')
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = torch.from_numpy(value)
    return tree


def recording_mode(collect_mode: CollectView, eval_mode: EvalMode, deterministic: bool) -> CollectView:
    """The collect mode as demonstrations are recorded: it acts with the eval mode's forward and reset where
    `deterministic` (so that per-env acting state, TAAC's trajectories, restarts each episode in the mode that acts
    on it), else with its own; and it keeps `demo_transition`'s columns, not the policy's training columns, which
    may read outputs that only its own collect forward gives (PPO's normalised obs). Its `random_action` and
    `state_dict` are not for this use."""
    if deterministic:
        collect_mode = dataclasses.replace(collect_mode, forward=eval_mode.forward, reset=eval_mode.reset)
    return dataclasses.replace(collect_mode, process_transition=demo_transition)


def demo_transition(obs: Any, policy_output: Mapping[str, Any], timestep: Timestep) -> dict[str, Any]:
    """A demonstration's columns of a batch of env steps: observations and rewards as the env gave them (not as a
    policy normalises or scales them for its training) and the action taken."""
    return {'obs': obs, 'action': policy_output['action'], 'reward': timestep.reward, 'next_obs': timestep.next_obs,
            'terminated': timestep.terminated, 'truncated': timestep.truncated}


def as_demos(episodes: Sequence[Mapping[str, Any]], metadata: Mapping[str, Any]) -> Demos:
    """`episodes` (time-ordered column dicts) and `metadata` as the `Demos` that `load_demos` would read back from
    `save_demos`' file, without the file: columns of all episodes end to end, on the CPU."""
    if not episodes:
        raise ValueError('no episodes to hold')
    flats = [_flatten(episode) for episode in episodes]
    return Demos(_unflatten(_columns(flats)), _metadata(flats, metadata))


def save_demos(path: str | os.PathLike, episodes: Sequence[Mapping[str, Any]], metadata: Mapping[str, Any]) -> Path:
    """Write `episodes` (time-ordered column dicts) and `metadata` to `path`, atomically."""
    if not episodes:
        raise ValueError('no episodes to save')
    flats = [_flatten(episode) for episode in episodes]
    columns, meta = _columns(flats), _metadata(flats, metadata)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.tmp')
    arrays = {f'{_COLUMN_PREFIX}{name}': value for name, value in columns.items()}
    with open(tmp, 'wb') as f:
        # numpy >= 2.1's stubs let the ** arrays fill `allow_pickle: bool`; the prefix keeps them apart (and numpy
        # versions setup.py allows lack allow_pickle, so it is not passed explicitly)
        np.savez_compressed(f, metadata=np.array(json.dumps(meta)), **arrays)  # type: ignore[arg-type]
    os.replace(tmp, path)
    return path


def _columns(flats: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {name: np.concatenate([flat[name] for flat in flats]) for name in flats[0]}


def _metadata(flats: Sequence[Mapping[str, np.ndarray]], metadata: Mapping[str, Any]) -> dict[str, Any]:
    return dict(metadata, format_version=FORMAT_VERSION,
                episode_lengths=[len(next(iter(flat.values()))) for flat in flats])


def load_demos(path: str | os.PathLike) -> Demos:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"demonstration file '{path}' not found")
    try:
        with np.load(path, allow_pickle=False) as data:
            metadata = json.loads(str(data['metadata']))
            flat = {name[len(_COLUMN_PREFIX):]: data[name] for name in data.files if name.startswith(_COLUMN_PREFIX)}
    except (OSError, ValueError, KeyError) as err:
        raise CheckpointError(f"demonstration file '{path}' cannot be read: {err}") from err
    if metadata.get('format_version') != FORMAT_VERSION:
        raise CheckpointError(f"demonstration file '{path}' has format version {metadata.get('format_version')}, "
                              f'this tidal reads version {FORMAT_VERSION}')
    return Demos(_unflatten(flat), metadata)


def check_demos(demos: Demos, env_id: str, obs_shape: Any, action_shape: Any, path: str | os.PathLike) -> None:
    """Refuse demonstrations recorded on another env or with other observation/action shapes."""
    meta = demos.metadata
    key = first_mismatch(meta, env_id, obs_shape, action_shape)
    if key == 'env_id':
        raise CheckpointError(f"demonstration file '{path}' was recorded on env '{meta.get('env_id')}', "
                              f"but env.env_id is '{env_id}'")
    if key is not None:
        expected = obs_shape if key == 'obs_shape' else action_shape
        raise CheckpointError(f"demonstration file '{path}' has {key} {meta.get(key)}, but "
                              f"policy.model.{key} is {expected}")


def first_mismatch(recorded: Mapping[str, Any], env_id: Optional[str], obs_shape: Any,
                   action_shape: Any) -> Optional[str]:
    """The first of 'env_id', 'obs_shape', 'action_shape' on which `recorded` (demonstrations' metadata, an
    expert's env and model keys) differs from the run's; None when it fits. A shape and a one-element list of it
    are the same shape."""
    if recorded.get('env_id') != env_id:
        return 'env_id'
    for key, expected in (('obs_shape', obs_shape), ('action_shape', action_shape)):
        if _as_list(recorded.get(key)) != _as_list(expected):
            return key
    return None


def _as_list(shape: Any) -> list:
    return list(shape) if isinstance(shape, (list, tuple)) else [shape]
