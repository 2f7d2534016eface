"""Uniform replay buffer: preallocated tensor columns written as a ring, sampled with replacement.

A batch is a dict of columns (tensors or numpy arrays with a shared leading dimension N, or nested
dicts of them, e.g. ``obs={'observation': ..., 'action_mask': ...}``). Each leaf becomes one column of
shape ``[capacity, *leaf_shape]`` on the buffer's device, allocated at the first `extend`, so one
env step costs one slice copy per column and one sample one `index_select` per column.

Transition number ``t`` (counted from the first ever `extend`) lives in slot ``t % capacity``; the
prioritized buffer relies on this to keep its priority tree aligned with the columns.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from tidal.base.device import to_device
from tidal.base.errors import CheckpointError, ConfigError, TidalError
from tidal.base.nest import KeyPath, path_name, tree_leaves, tree_map



class ReplayBufferError(TidalError, ValueError):
    """A batch does not fit the buffer's columns, or the buffer cannot serve a request."""


def _to_tensor(path: KeyPath, value: Any) -> torch.Tensor:
    """One column's values as a tensor with a leading transition dimension.

    The tensor may stay on any device: copying it into the column moves it.
    """
    if isinstance(value, torch.Tensor):
        tensor = value.detach() if value.requires_grad else value
    else:
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            value = value.copy()  # torch warns on read-only arrays; the buffer copies the data anyway
        try:
            tensor = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ReplayBufferError(f"column '{path_name(path)}' cannot be converted to a tensor: "
                                    f'{err}') from err
    if tensor.dim() == 0:
        raise ReplayBufferError(f"column '{path_name(path)}' is a scalar; every column needs a leading "
                                f"dimension N (the number of transitions), e.g. shape [1]")
    return tensor


def _flatten_batch(tree: dict, prefix: KeyPath,
                   out: dict[KeyPath, torch.Tensor]) -> dict[KeyPath, torch.Tensor]:
    """Fill `out` with {key path: tensor} for every leaf of a nested batch."""
    for key, value in tree.items():
        path = prefix + (key, )
        if isinstance(value, dict):
            if not value:
                raise ReplayBufferError(f"column '{path_name(path)}' is an empty dict; it holds no data")
            _flatten_batch(value, path, out)
        else:
            out[path] = _to_tensor(path, value)
    return out


def _set_leaf(tree: dict, path: KeyPath, value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _key_mismatch_message(expected_paths: Iterable[KeyPath], given_paths: Iterable[KeyPath]) -> str:
    """One line naming the columns a batch lacks and those it adds (with the closest known name)."""
    expected = {path_name(path) for path in expected_paths}
    given = {path_name(path) for path in given_paths}
    parts = [f"missing column '{name}'" for name in sorted(expected - given)]
    for name in sorted(given - expected):
        close = difflib.get_close_matches(name, sorted(expected), n=1)
        parts.append(f"unexpected column '{name}'" + (f" (did you mean '{close[0]}'?)" if close else ''))
    return 'batch does not match the buffer columns: ' + '; '.join(parts)


def check_fits_columns(values: dict[KeyPath, torch.Tensor], columns: dict[KeyPath, torch.Tensor], leading_dims: int,
                       row: str) -> None:
    """A batch's leaves [N, *leaf_shape] must be exactly the allocated columns [*leading, *leaf_shape], with
    their per-`row` shapes and dtypes, or a one-line ReplayBufferError names the first that is not."""
    if values.keys() != columns.keys():
        raise ReplayBufferError(_key_mismatch_message(columns, values.keys()))
    for path, value in values.items():
        column = columns[path]
        if value.shape[1:] != column.shape[leading_dims:]:
            raise ReplayBufferError(f"column '{path_name(path)}': expected per-{row} shape "
                                    f'{tuple(column.shape[leading_dims:])}, got {tuple(value.shape[1:])} '
                                    f'(batch shape {tuple(value.shape)})')
        if value.dtype != column.dtype:
            raise ReplayBufferError(f"column '{path_name(path)}': expected dtype {column.dtype}, got {value.dtype}")


def check_state_keys(sd: dict, what: str, keys: Sequence[str]) -> None:
    """A buffer's saved state (`what`: 'replay buffer') holds every entry of `keys`."""
    missing = [key for key in keys if key not in sd]
    if missing:
        raise CheckpointError(f'{what} state is missing {missing}')


def saved_columns(sd: dict, what: str, rows: tuple[int, ...], unit: str,
                  per_row: Mapping[str, Any] = {}) -> dict[KeyPath, torch.Tensor]:
    """The columns of a buffer's saved state `sd` by key path, checked before anything is loaded: each column,
    and each entry of `per_row` (by its name), is a tensor whose leading dims are `rows` (`unit` says them in
    words: '5 transitions'), and saved rows come with columns."""
    saved = dict(tree_leaves(sd['columns']))
    named = {**{f"'{name}'": value for name, value in per_row.items()},
             **{f"column '{path_name(path)}'": column for path, column in saved.items()}}
    for name, tensor in named.items():
        if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape[:len(rows)]) != rows:
            raise CheckpointError(f'{what} state: {name} does not hold {unit}')
    if rows[-1] and not saved:
        raise CheckpointError(f'{what} state holds {unit} but no columns')
    return saved


class ReplayBuffer:
    """A fixed-size ring of transitions sampled uniformly with replacement.

    Sampling draws from a private `torch.Generator`, so a seeded buffer gives the same indices on
    every run and `state_dict` can resume the exact sample sequence.
    """

    # Keys that `sample` adds to the result, so a batch may not use them as columns.
    reserved_keys: tuple[str, ...] = ('index', )

    def __init__(self, size: int, device: str | torch.device = 'cpu', seed: int | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ConfigError(f'replay buffer size must be a positive integer, got {size!r}')
        self._capacity = int(size)
        self._device = torch.device(device)
        # indices are drawn on the CPU so that a seed gives the same samples on every device
        self._generator = torch.Generator()
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)
        self._cursor = 0  # slot the next transition is written to
        self._size = 0
        self._columns: dict = {}  # nested like the batches, leaves [capacity, *leaf_shape]
        self._flat_columns: dict[KeyPath, torch.Tensor] = {}  # the same tensors by key path

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def device(self) -> torch.device:
        return self._device

    def __len__(self) -> int:
        return self._size

    # writing -------------------------------------------------------------------------------------

    def extend(self, batch: dict) -> None:
        """Append N transitions; when the ring is full the oldest are overwritten."""
        self._write(batch)

    def _write(self, batch: dict) -> tuple[int, int]:
        """Copy a batch into the columns; returns (first slot written, number of slots written)."""
        values, count = self._check_batch(batch)
        if count == 0:
            return self._cursor, 0
        if not self._flat_columns:
            self._allocate(values)
        start = self._cursor
        if count > self._capacity:  # only the newest `capacity` transitions survive
            start = (start + count - self._capacity) % self._capacity
            values = {path: value[-self._capacity:] for path, value in values.items()}
            count = self._capacity
        head = min(count, self._capacity - start)  # slots left before the ring wraps
        for path, column in self._flat_columns.items():
            value = to_device(values[path], self._device)
            if head == count:
                column[start:start + count] = value
            else:
                column[start:] = value[:head]
                column[:count - head] = value[head:]
        self._cursor = (start + count) % self._capacity
        self._size = min(self._size + count, self._capacity)
        return start, count

    def _check_batch(self, batch: dict) -> tuple[dict[KeyPath, torch.Tensor], int]:
        """Convert every leaf and check it against the columns before anything is written;
        returns the tensors by key path and the number of transitions."""
        if not isinstance(batch, dict) or not batch:
            raise ReplayBufferError(f'extend expects a non-empty dict of columns, got {type(batch).__name__}')
        values = _flatten_batch(batch, (), {})
        if self._flat_columns:
            check_fits_columns(values, self._flat_columns, leading_dims=1, row='transition')
        else:
            reserved = [key for key in batch if key in self.reserved_keys]
            if reserved:
                raise ReplayBufferError(f"column name '{reserved[0]}' is reserved: sample() adds it to "
                                        f'every batch; rename the column')
        count = next(iter(values.values())).shape[0]
        if any(value.shape[0] != count for value in values.values()):
            counts = {path_name(path): value.shape[0] for path, value in values.items()}
            raise ReplayBufferError(f'all columns must hold the same number of transitions, got {counts}')
        return values, count

    def _allocate(self, values: dict[KeyPath, torch.Tensor]) -> None:
        # uninitialized: only slots below `_size` are ever read, and the OS commits a large CPU column's pages
        # as they are written (zeroing 100k Atari frame stacks would take 2.8 GB and 12 s up front)
        for path, value in values.items():
            column = torch.empty((self._capacity, *value.shape[1:]), dtype=value.dtype, device=self._device)
            self._flat_columns[path] = column
            _set_leaf(self._columns, path, column)

    def clear(self) -> None:
        """Forget every transition; the columns stay allocated for the next ones."""
        self._cursor = self._size = 0

    # reading -------------------------------------------------------------------------------------

    def sample(self, batch_size: int) -> dict:
        """`batch_size` transitions drawn uniformly with replacement, plus their slots as 'index'."""
        self._check_sample(batch_size)
        index = torch.randint(self._size, (batch_size, ), generator=self._generator)
        return self.sample_index(index)

    def sample_sequence(self, batch_size: int, length: int, stride: int = 1) -> dict:
        """`batch_size` sequences of `length` transitions, each column [batch_size, length, ...].

        Step k + 1 of a sequence is the transition written `stride` rows after step k: with a
        collector of n envs (whose rows are step-major) stride n keeps each sequence inside one env's
        stream. Sequences never cross the ring's seam between newest and oldest data; they may cross
        episode ends, which the stored flags (terminated, truncated, a step type) mark.
        """
        self._check_sample(batch_size)
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ReplayBufferError(f'sequence length must be a positive integer, got {length!r}')
        if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
            raise ReplayBufferError(f'sequence stride must be a positive integer, got {stride!r}')
        span = (length - 1) * stride + 1  # rows covered by one sequence
        if span > self._size:
            raise ReplayBufferError(f'sequences of {length} steps {stride} rows apart need {span} transitions, '
                                    f'the buffer holds {self._size}; collect more before learning '
                                    f'(random_collect_size)')
        start = torch.randint(self._size - span + 1, (batch_size, 1), generator=self._generator)
        age = start + torch.arange(length) * stride  # 0 is the oldest transition held
        oldest = (self._cursor - self._size) % self._capacity
        batch = self.sample_index(((oldest + age) % self._capacity).flatten())
        return tree_map(lambda column: column.reshape(batch_size, length, *column.shape[1:]), batch)

    def sample_index(self, index: torch.Tensor) -> dict:
        """The transitions in the given slots (which must be below `len(self)`), plus 'index'."""
        index = to_device(torch.as_tensor(index, dtype=torch.long), self._device)
        batch = tree_map(lambda column: column.index_select(0, index), self._columns)
        batch['index'] = index
        return batch

    def following(self, index: torch.Tensor, steps: int, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The slots of the transitions written 0, stride, ..., (steps - 1) * stride rows after those in the slots
        `index` [B], as [B, steps], and whether each is held (written and not past the newest transition)."""
        offsets = torch.arange(steps, device=index.device) * stride
        oldest = (self._cursor - self._size) % self._capacity
        age = (index - oldest) % self._capacity  # 0 is the oldest transition held
        held = age[:, None] + offsets < self._size
        return (index[:, None] + offsets) % self._capacity, held

    def gather(self, index: torch.Tensor, names: Iterable[str]) -> dict:
        """The columns `names` (a nested one whole) of the transitions in the slots `index`, without 'index'."""
        return {name: tree_map(lambda column: column.index_select(0, index), self._columns[name]) for name in names}

    def _check_sample(self, batch_size: int) -> None:
        if self._size == 0:
            raise ReplayBufferError('cannot sample from an empty replay buffer; extend it first '
                                    '(or collect random_collect_size transitions before learning)')
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ReplayBufferError(f'batch_size must be a positive integer, got {batch_size!r}')

    # checkpoints ---------------------------------------------------------------------------------

    def sampling_state(self) -> torch.Tensor:
        """The sampler's generator state alone: what a resume needs of a buffer whose contents are rebuilt from
        their source (an offline run's dataset)."""
        return self._generator.get_state()

    def load_sampling_state(self, state: torch.Tensor) -> None:
        self._generator.set_state(state)

    def state_dict(self) -> dict:
        """Filled slots, ring position and RNG state; enough to resume the same sample sequence."""
        columns: dict = {}
        for path, column in self._flat_columns.items():
            # a copy, not a view: saving a view would write the whole preallocated storage
            _set_leaf(columns, path, column[:self._size].to('cpu', copy=True))
        return {
            'capacity': self._capacity,
            'cursor': self._cursor,
            'size': self._size,
            'rng_state': self._generator.get_state(),
            'columns': columns,
        }

    def load_state_dict(self, sd: dict) -> None:
        check_state_keys(sd, 'replay buffer', ('capacity', 'cursor', 'size', 'rng_state', 'columns'))
        if sd['capacity'] != self._capacity:
            raise CheckpointError(f"replay buffer state has capacity {sd['capacity']}, this buffer has "
                                  f'{self._capacity}; build the buffer with the saved size')
        size = int(sd['size'])
        saved = saved_columns(sd, 'replay buffer', (size, ), f'{size} transitions')
        self._columns, self._flat_columns = {}, {}
        if saved:
            self._allocate(saved)
            for path, column in saved.items():
                self._flat_columns[path][:size] = column
        self._cursor = int(sd['cursor'])
        self._size = size
        self._generator.set_state(sd['rng_state'])
