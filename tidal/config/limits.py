"""Checks across keys: settings that are each in range but make no sense together, and sizes that
cannot fit in memory, refused before anything is allocated.

The replay buffer (of an off-policy feed), a batch and a collector call each hold transitions of
4 bytes x (obs + next_obs + action + reward + 1 word of terminated/truncated flags), float32 elements
(a discrete action is one index), except that image observations ([H, W, C]) count one byte per value,
as tidal's envs keep them uint8. That is a lower bound: a policy may store more columns.
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Mapping, Optional

from tidal.config.tree import value_at
from tidal.base.errors import ConfigError
from tidal.registry import feed_class

FLOAT_BYTES = 4
_BUFFER = 'policy.other.replay_buffer.replay_buffer_size'
_UNITS = ('bytes', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB')


def check_consistency(cfg: Mapping) -> None:
    """Keys that contradict each other, named with both values and the reason."""
    buffer_size = value_at(cfg, _BUFFER)
    for path, what in (('policy.random_collect_size', 'warm-up transitions beyond what the buffer holds '
                                                      'are overwritten before the first update'),
                       ('policy.collect.n_sample', 'a collector call would overwrite its own transitions '
                                                  'before any update sees them'),
                       ('policy.collect.unroll_len', 'no sequence that long fits in the buffer')):
        value = value_at(cfg, path)
        if value is not None and buffer_size is not None and value > buffer_size:
            raise ConfigError(f'{path}={value} is larger than {_BUFFER}={buffer_size}: {what}')


def check_collector(cfg: Mapping, policy_cls: Any) -> None:
    """Settings of a Ray collector that cannot work together, refused before Ray starts. `policy_cls` is a
    registered policy class (tidal.config cannot import tidal.policies to name its type)."""
    collector, policy = cfg['collector'], cfg['policy']
    evaluator = policy['eval']['evaluator']
    if evaluator.get('on_ray') and evaluator.get('video_every'):
        raise ConfigError('policy.eval.evaluator.on_ray: the eval actor records no videos (it may run on another '
                          'machine); set policy.eval.evaluator.video_every=0')
    if collector['type'] != 'ray':
        if collector['mode'] == 'async':  # else the run would quietly be a synchronous one
            raise ConfigError("collector.mode='async' overlaps Ray workers' collection with learning, but "
                              "collector.type='local' collects in this process, in step with the learner: set "
                              "collector.type='ray' or collector.mode='sync'")
        return
    workers, per_worker, envs = collector['num_workers'], collector['envs_per_worker'], cfg['env']['collector_env_num']
    if not getattr(policy_cls, 'remote_collect', True):
        raise ConfigError(f"collector.type='ray': policy '{policy['type']}' keeps learning state in its collect "
                          f"mode, which a Ray worker cannot share; use collector.type='local'")
    if per_worker == 0 and envs % workers:
        raise ConfigError(f'collector.num_workers={workers} does not divide env.collector_env_num={envs}; '
                          f'set collector.envs_per_worker')
    if collector['mode'] == 'async':
        spec = feed_class(policy_cls).spec(cfg)
        if not (spec.async_collection or spec.rollout_ahead):
            raise ConfigError(f"collector.mode='async' runs with the off-policy and on-policy pipelines; policy "
                              f"'{policy['type']}' runs the '{policy_cls.pipeline}' one: use collector.mode='sync'")
        if policy['collect'].get('unroll_len', 1) > 1:
            raise ConfigError("collector.mode='async' hands in one worker's envs at a time, which sequence "
                              "samples (policy.collect.unroll_len > 1) cannot cut: use collector.mode='sync'")


def transition_bytes(obs_shape: Any, action_shape: Any, discrete: bool) -> int:
    """Bytes of one stored transition: obs, next_obs (uint8 for images), action, reward and the flags, float32
    each."""
    action_size = 1 if discrete else _numel(action_shape)
    image = isinstance(obs_shape, (list, tuple)) and len(obs_shape) == 3
    return 2 * _numel(obs_shape) * (1 if image else FLOAT_BYTES) + FLOAT_BYTES * (action_size + 1 + 1)


def check_memory(cfg: Mapping, env_name: str, discrete: bool, policy_cls: Optional[type] = None,
                 available: Optional[Callable[[], Optional[int]]] = None) -> None:
    """Refuse a replay buffer, batch or collector call whose transitions need more memory than is
    available now. Skipped where the shapes are unknown or the available memory cannot be read."""
    model = value_at(cfg, 'policy.model') or {}
    obs_shape, action_shape = model.get('obs_shape'), model.get('action_shape')
    if obs_shape is None or action_shape is None:
        return
    free = (available or available_memory)()
    if free is None:
        return
    each = transition_bytes(obs_shape, action_shape, discrete)
    unroll_len = value_at(cfg, 'policy.collect.unroll_len') or 1
    # besides replay, a batch and a collection: what the policy's feed keeps (PPG's aux.interval rollouts)
    feed_rows = feed_class(policy_cls).memory_rows(cfg) if policy_cls is not None else {}
    replays = policy_cls is None or not feed_class(policy_cls).spec(cfg).on_policy  # on-policy feeds keep none
    for path, transitions in ((_BUFFER, value_at(cfg, _BUFFER) if replays else None),
                              ('policy.learn.batch_size', _times(value_at(cfg, 'policy.learn.batch_size'), unroll_len)),
                              ('policy.collect.n_sample', value_at(cfg, 'policy.collect.n_sample')),
                              ('policy.random_collect_size', value_at(cfg, 'policy.random_collect_size')),
                              *feed_rows.items()):
        if transitions is None or transitions * each <= free:
            continue
        value = value_at(cfg, path)
        steps = f' (sequences of {unroll_len} steps)' if path == 'policy.learn.batch_size' and unroll_len > 1 else ''
        raise ConfigError(f'{path}={value}{steps} needs about {format_bytes(transitions * each)} for {env_name} '
                          f'transitions ({each} bytes each), more than the {format_bytes(free)} of memory '
                          f'available')


def available_memory() -> Optional[int]:
    """Bytes of memory available to a new allocation: MemAvailable of /proc/meminfo, else the free
    physical pages; None where neither can be read."""
    try:
        with open('/proc/meminfo', encoding='ascii') as file:
            for line in file:
                if line.startswith('MemAvailable:'):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    except (AttributeError, OSError, ValueError):
        return None


def format_bytes(count: float) -> str:
    """'36.0 TB', '21.3 GB', '512 bytes' (decimal units)."""
    unit = 0
    while count >= 1000 and unit < len(_UNITS) - 1:
        count /= 1000
        unit += 1
    return f'{int(count)} bytes' if unit == 0 else f'{count:.1f} {_UNITS[unit]}'


def _times(count: Optional[int], factor: int) -> Optional[int]:
    return None if count is None else count * factor


def _numel(shape: Any) -> int:
    return math.prod(shape) if isinstance(shape, (list, tuple)) else int(shape)
