"""Shared test fixtures: a tiny deterministic env whose every value is known; a small disk to fill."""
from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from slow_tests import slow_test_ids
from tidal.envs import GymEnv

COUNTER_ID = 'tidal_test/Counter-v0'


class CounterEnv(gymnasium.Env):
    """The observation and the reward are the steps taken in this episode, so every value is known.

    Terminates when the count reaches `terminate_at`; truncation comes from `max_episode_steps`.
    With `dict_obs` the observation is {'observation', 'action_mask'}, the mask being [1, count % 2].
    """

    def __init__(self, terminate_at: int | None = None, dict_obs: bool = False,
                 obs_shape: tuple[int, ...] = (1,), obs_dtype: str = 'float32') -> None:
        self.terminate_at = terminate_at
        self.dict_obs = dict_obs
        self.obs_shape = tuple(obs_shape)
        self.obs_dtype = np.dtype(obs_dtype)
        count_space = spaces.Box(0.0, 1000.0, self.obs_shape, self.obs_dtype)
        if dict_obs:
            self.observation_space = spaces.Dict(
                observation=count_space, action_mask=spaces.Box(0, 1, (2,), np.int8))
        else:
            self.observation_space = count_space
        self.action_space = spaces.Discrete(2)
        self.count = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.count = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.count += 1
        terminated = self.terminate_at is not None and self.count >= self.terminate_at
        return self._obs(), float(self.count), terminated, False, {}

    def _obs(self) -> Any:
        count = np.full(self.obs_shape, self.count, dtype=self.obs_dtype)
        if self.dict_obs:
            return {'observation': count, 'action_mask': np.array([1, self.count % 2], dtype=np.int8)}
        return count


gymnasium.register(COUNTER_ID, entry_point=CounterEnv)


@pytest.fixture
def counter_env() -> Callable[..., GymEnv]:
    """Builds the 'gym' adapter for the counter env with the given gymnasium.make kwargs."""
    def build(**env_kwargs: Any) -> GymEnv:
        return GymEnv({'env_id': COUNTER_ID, 'env_kwargs': env_kwargs})
    return build


class SmallDisk:
    """A real filesystem of a few MiB at `path`: `fill()` leaves it (almost) full, so writes fail with
    the ENOSPC a full disk gives, through every layer (torch's zip writer, tensorboardX's thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / 'filler'

    def fill(self, leave: int = 0) -> None:
        """Write until the disk is full, then give back `leave` bytes."""
        chunk = b'\0' * (1 << 16)
        with open(self.filler, 'ab', buffering=0) as file:
            try:
                while True:
                    file.write(chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC, err
        if leave:
            with open(self.filler, 'r+b') as file:
                file.truncate(max(0, self.filler.stat().st_size - leave))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 4 MiB tmpfs mounted under tmp_path; skipped where mounting is not allowed (it needs root, or
    CAP_SYS_ADMIN in a container)."""
    mount_point = tmp_path / 'disk'
    mount_point.mkdir()
    if not sys.platform.startswith('linux'):
        pytest.skip('a small tmpfs to fill needs Linux')
    try:
        mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', str(mount_point)],
                                 capture_output=True, text=True)
    except OSError as err:
        pytest.skip(f'cannot run mount to make a small disk to fill: {err}')
    if mounted.returncode != 0:
        pytest.skip(f'cannot mount a small tmpfs to fill (needs root): {mounted.stderr.strip()}')
    try:
        yield SmallDisk(mount_point)
    finally:
        subprocess.run(['umount', '--lazy', str(mount_point)], capture_output=True)


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects by the marks
def pytest_collection_modifyitems(config, items) -> None:
    """Mark the long end-to-end tests of slow_tests.txt `slow`, so that the README's test command leaves them out
    and `python -m pytest -q -m slow` runs them (CI runs both; tests/test_slow_list.py keeps the list current); tests marked `gpu` run only where torch sees a CUDA device."""
    slow = slow_test_ids()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    import torch
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA device')
    for item in items:
        if 'gpu' in item.keywords:
            item.add_marker(skip)


def pytest_configure(config) -> None:
    # tiny networks: one thread is fastest and immune to the other core being busy
    import torch
    torch.set_num_threads(1)
