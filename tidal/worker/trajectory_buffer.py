"""Trajectory buffer: each env's steps kept in order, addressed by (env, position).

Where `ReplayBuffer` serves independent transitions, this buffer serves what learners that unroll a
trajectory need (n-step returns, sequence models, learned models): step `p` of env `e`, the steps
after it, and how far its episode goes on. Each env owns a ring of `capacity_per_env` steps; its
steps are numbered from 0 in the order they were added (never wrapping) and step `p` lives in slot
``p % capacity_per_env``, so every lookup is index arithmetic on columns of shape
``[num_envs, capacity_per_env, *leaf_shape]``.

For every slot the buffer keeps the position of the last step of that step's episode (-1 while the
episode runs), written once when the episode ends, so `steps_to_episode_end` is O(1) per query.
"""
from __future__ import annotations

import difflib
from typing import Any, Sequence

import numpy as np
import torch

from tidal.base.errors import CheckpointError, ConfigError
from tidal.base.nest import KeyPath, path_name, tree_map
from tidal.worker.replay_buffer import (ReplayBufferError, _flatten_batch, _set_leaf, check_fits_columns,
                                        check_state_keys, saved_columns)

# the columns that mark episode ends; an episode ends at a step where either is true
EPISODE_END_KEYS = ('terminated', 'truncated')
_RUNNING = -1  # episode_end of a step whose episode has not ended yet
_NO_END = torch.iinfo(torch.long).max


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f'trajectory buffer {name} must be a positive integer, got {value!r}')
    return int(value)


class TrajectoryBuffer:
    """Per-env rings of steps, written from step-major collector batches and read by (env, position).

    Sampling draws from a private `torch.Generator`, so a seeded buffer gives the same samples on
    every run and `state_dict` can resume the exact sample sequence.
    """

    def __init__(self, num_envs: int, capacity_per_env: int, device: str | torch.device = 'cpu',
                 seed: int | None = None) -> None:
        self._num_envs = _positive_int('num_envs', num_envs)
        self._capacity = _positive_int('capacity_per_env', capacity_per_env)
        self._device = torch.device(device)
        # positions are drawn on the CPU so that a seed gives the same samples on every device
        self._generator = torch.Generator()
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)
        self._current = torch.zeros(self._num_envs, dtype=torch.long, device=self._device)  # steps added
        self._episode_start = torch.zeros_like(self._current)  # first position of each running episode
        self._episode_end = torch.full((self._num_envs, self._capacity), _RUNNING, dtype=torch.long,
                                       device=self._device)  # per slot: last position of its episode
        self._columns: dict = {}  # nested like the batches, leaves [num_envs, capacity, *leaf_shape]
        self._flat_columns: dict[KeyPath, torch.Tensor] = {}  # the same tensors by key path

    @property
    def num_envs(self) -> int:
        return self._num_envs

    @property
    def capacity_per_env(self) -> int:
        return self._capacity

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def columns(self) -> frozenset[str]:
        """The top-level column names (empty before the first `extend`)."""
        return frozenset(self._columns)

    def __len__(self) -> int:
        return int(self._current.clamp(max=self._capacity).sum())

    def current_position(self) -> torch.Tensor:
        """Per env, the number of steps ever added: one past its newest stored position."""
        return self._current.clone()

    # writing -------------------------------------------------------------------------------------

    def extend(self, batch: dict) -> None:
        """Append `steps * num_envs` step-major rows: env i's k-th step is row k * num_envs + i.

        Each env's oldest steps are overwritten once its ring is full.
        """
        values, steps = self._check_batch(batch)
        if steps == 0:
            return
        if not self._flat_columns:
            self._allocate(values)
        kept = min(steps, self._capacity)  # of a longer batch only the newest `capacity` steps survive
        env = torch.arange(self._num_envs, device=self._device)[:, None]
        slot = (self._current[:, None] + torch.arange(steps - kept, steps, device=self._device)) % self._capacity
        for path, column in self._flat_columns.items():
            column[env, slot] = values[path][steps - kept:].transpose(0, 1).to(self._device)
        done = (values[('terminated', )] | values[('truncated', )]).to(self._device).T  # [num_envs, steps]
        self._record_episode_ends(done, kept)
        self._current += steps

    def _record_episode_ends(self, done: torch.Tensor, kept: int) -> None:
        """Write episode_end for the new steps and for the stored steps of episodes they end."""
        steps = done.shape[1]
        position = self._current[:, None] + torch.arange(steps, device=self._device)  # [num_envs, steps]
        # 1. each new step's episode ends at the first done at or after it (a reverse running minimum)
        end_at = torch.where(done, position, _NO_END)
        next_end = end_at.flip(1).cummin(1).values.flip(1)
        next_end = torch.where(next_end == _NO_END, _RUNNING, next_end)
        # 2. the steps already stored of each env's running episode end at this batch's first done;
        #    fill those that survive this write, each a contiguous range of positions
        first_end = next_end[:, 0]
        surviving = (self._current + steps - self._capacity).clamp(min=0)
        low = torch.maximum(self._episode_start, surviving)
        count = torch.where(first_end >= 0, (self._current - low).clamp(min=0), 0)
        env = torch.repeat_interleave(torch.arange(self._num_envs, device=self._device), count)
        if env.numel():
            range_start = torch.repeat_interleave(count.cumsum(0) - count, count)
            filled = low[env] + torch.arange(env.numel(), device=self._device) - range_start
            self._episode_end[env, filled % self._capacity] = first_end[env]
        # 3. the new steps themselves, then where each env's running episode now starts
        slot = position[:, steps - kept:] % self._capacity
        self._episode_end[torch.arange(self._num_envs, device=self._device)[:, None], slot] = \
            next_end[:, steps - kept:]
        last_end = torch.where(done, position, -1).amax(1)  # -1: no end in this batch
        self._episode_start = torch.where(last_end >= 0, last_end + 1, self._episode_start)

    def _check_batch(self, batch: dict) -> tuple[dict[KeyPath, torch.Tensor], int]:
        """Check every column before anything is written; returns the columns reshaped to
        [steps, num_envs, *leaf_shape] by key path, and the number of steps."""
        if not isinstance(batch, dict) or not batch:
            raise ReplayBufferError(f'extend expects a non-empty dict of columns, got {type(batch).__name__}')
        values = _flatten_batch(batch, (), {})
        for key in EPISODE_END_KEYS:
            flag = values.get((key, ))
            if flag is None:
                raise ReplayBufferError(f"batch has no '{key}' column; the trajectory buffer needs boolean "
                                        f"'terminated' and 'truncated' columns to find episode ends")
            if flag.dtype != torch.bool or flag.dim() != 1:
                raise ReplayBufferError(f"column '{key}' must be a boolean flag per row (shape [N]), got "
                                        f'{flag.dtype} of shape {tuple(flag.shape)}')
        rows = values[('terminated', )].shape[0]
        if any(value.shape[0] != rows for value in values.values()):
            counts = {path_name(path): value.shape[0] for path, value in values.items()}
            raise ReplayBufferError(f'all columns must hold the same number of rows, got {counts}')
        if rows % self._num_envs:
            raise ReplayBufferError(f'a batch of {rows} rows cannot be split into steps of {self._num_envs} '
                                    f'envs; extend expects steps * num_envs step-major rows')
        if self._flat_columns:
            check_fits_columns(values, self._flat_columns, leading_dims=2, row='step')
        steps = rows // self._num_envs
        return {path: value.reshape(steps, self._num_envs, *value.shape[1:])
                for path, value in values.items()}, steps

    def _allocate(self, values: dict[KeyPath, torch.Tensor]) -> None:
        """One zeroed column [num_envs, capacity, *leaf_shape] per leaf of `values`, whose leaves have two
        leading dims ([steps, num_envs] in a batch, [num_envs, steps] in a state dict)."""
        for path, value in values.items():
            column = torch.zeros((self._num_envs, self._capacity, *value.shape[2:]), dtype=value.dtype,
                                 device=self._device)
            self._flat_columns[path] = column
            _set_leaf(self._columns, path, column)

    # reading -------------------------------------------------------------------------------------

    def get(self, env_ids: torch.Tensor, positions: torch.Tensor, keys: Sequence[str] | None = None) -> dict:
        """The columns (or only `keys`) at the (env, position) pairs, each [*index_shape, *leaf_shape].

        `env_ids` and `positions` broadcast against each other; every position must still be stored.
        """
        env, position = self._stored(env_ids, positions)
        columns = self._columns
        if keys is not None:
            unknown = [key for key in keys if key not in columns]
            if unknown:
                close = difflib.get_close_matches(str(unknown[0]), list(columns), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ''
                raise ReplayBufferError(f"the buffer has no column '{unknown[0]}'{hint}")
            columns = {key: columns[key] for key in keys}
        slot = position % self._capacity
        return tree_map(lambda column: column[env, slot], columns)

    def steps_to_episode_end(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Steps from each (env, position) to the last step of its episode (0 if it ended the episode);
        for a running episode, to the env's newest stored step."""
        env, position = self._stored(env_ids, positions)
        end = self._episode_end[env, position % self._capacity]
        return torch.where(end == _RUNNING, self._current[env] - 1, end) - position

    def sample_positions(self, batch_size: int, length: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """(env_ids [B], start positions [B]) uniform over the pairs whose `length` steps are all stored.

        Sequences may cross episode ends: `steps_to_episode_end` tells the caller where to stop.
        """
        batch_size = _positive_int('batch_size', batch_size)
        _, oldest, starts = self._valid_starts(length)
        index = torch.randint(int(starts.sum()), (batch_size, ), generator=self._generator)
        last = starts.cumsum(0)  # one past each env's last index
        env = torch.searchsorted(last, index, right=True)
        start = oldest[env] + index - (last[env] - starts[env])
        return env.to(self._device), start.to(self._device)

    def _valid_starts(self, length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per env on the CPU: steps added, oldest stored position, and how many positions start
        `length` stored steps (the oldest ones); raises if no env has one."""
        length = _positive_int('sequence length', length)
        current = self._current.cpu()
        oldest = (current - self._capacity).clamp(min=0)
        starts = (current - length - oldest + 1).clamp(min=0)
        if int(starts.sum()) == 0:
            raise ReplayBufferError(f'no env holds {length} steps yet (each holds at most '
                                    f'{int((current - oldest).max())} of {self._capacity}); collect more '
                                    f'before sampling')
        return current, oldest, starts

    def _stored(self, env_ids: Any, positions: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Check that every (env, position) pair is stored; returns both broadcast to one shape."""
        env, position = self._index_pairs(env_ids, positions)
        self._check_stored(env, position)
        return env, position

    def _index_pairs(self, env_ids: Any, positions: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Integer env ids in range and positions, broadcast to one shape; positions are not checked."""
        env = torch.as_tensor(env_ids, device=self._device)
        position = torch.as_tensor(positions, device=self._device)
        for name, index in (('env_ids', env), ('positions', position)):
            if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
                raise ReplayBufferError(f'{name} must be integers, got {index.dtype}')
        try:
            env, position = torch.broadcast_tensors(env.long(), position.long())
        except RuntimeError:
            raise ReplayBufferError(f'env_ids of shape {tuple(env.shape)} and positions of shape '
                                    f'{tuple(position.shape)} do not broadcast') from None
        bad_env = (env < 0) | (env >= self._num_envs)
        if bad_env.any():
            first = int(env[bad_env][0])
            raise ReplayBufferError(f'env id {first} is out of range; the buffer has {self._num_envs} envs')
        return env, position

    def _check_stored(self, env: torch.Tensor, position: torch.Tensor) -> None:
        """Raise naming the first (env, position) pair that is not stored, and why."""
        current = self._current[env]
        oldest = (current - self._capacity).clamp(min=0)
        bad = (position < oldest) | (position >= current)
        if bad.any():
            i = bad.flatten().nonzero()[0, 0]
            e, p = int(env.flatten()[i]), int(position.flatten()[i])
            low, high = int(oldest.flatten()[i]), int(current.flatten()[i])
            why = 'overwritten' if 0 <= p < low else 'never added' if p >= high else 'negative'
            raise ReplayBufferError(f'position {p} of env {e} is not stored ({why}); env {e} holds '
                                    f'positions [{low}, {high})')

    # checkpoints ---------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Stored slots, positions, episode bookkeeping and RNG state (tensors, ints and dicts only)."""
        stored = _stored_slots(self._current, self._capacity)
        columns: dict = {}
        for path, column in self._flat_columns.items():
            # a copy, not a view: saving a view would write the whole preallocated storage
            _set_leaf(columns, path, column[:, :stored].to('cpu', copy=True))
        return {
            'num_envs': self._num_envs,
            'capacity_per_env': self._capacity,
            'current': self._current.to('cpu', copy=True),
            'episode_start': self._episode_start.to('cpu', copy=True),
            'episode_end': self._episode_end[:, :stored].to('cpu', copy=True),
            'rng_state': self._generator.get_state(),
            'columns': columns,
        }

    def load_state_dict(self, sd: dict) -> None:
        check_state_keys(sd, 'trajectory buffer', ('num_envs', 'capacity_per_env', 'current', 'episode_start',
                                                    'episode_end', 'rng_state', 'columns'))
        if (sd['num_envs'], sd['capacity_per_env']) != (self._num_envs, self._capacity):
            raise CheckpointError(f"trajectory buffer state has {sd['num_envs']} envs x "
                                  f"{sd['capacity_per_env']} steps, this buffer has {self._num_envs} x "
                                  f'{self._capacity}; build the buffer with the saved sizes')
        current = sd['current']
        for key in ('current', 'episode_start'):
            if not isinstance(sd[key], torch.Tensor) or tuple(sd[key].shape) != (self._num_envs, ):
                raise CheckpointError(f"trajectory buffer state: '{key}' is not a tensor of "
                                      f'{self._num_envs} positions')
        stored = _stored_slots(current, self._capacity)
        saved = saved_columns(sd, 'trajectory buffer', (self._num_envs, stored), f'{self._num_envs} x {stored} steps',
                              per_row={'episode_end': sd['episode_end']})
        self._columns, self._flat_columns = {}, {}
        if saved:
            self._allocate(saved)
            for path, column in saved.items():
                self._flat_columns[path][:, :stored] = column
        self._current = current.to(self._device, torch.long)
        self._episode_start = sd['episode_start'].to(self._device, torch.long)
        self._episode_end.fill_(_RUNNING)
        self._episode_end[:, :stored] = sd['episode_end']
        self._generator.set_state(sd['rng_state'])


def _stored_slots(current: torch.Tensor, capacity: int) -> int:
    """Slots [0, n) hold every env's stored steps: rings fill from slot 0."""
    return int(current.clamp(max=capacity).max())
