"""Collectors: step the envs with the policy's collect mode and return training samples."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

import numpy as np
import torch

from tidal.base.collector import EpisodeStats
from tidal.base.errors import PolicyError, TidalError
from tidal.envs.env_manager import EnvManager, Step
from tidal.base.modes import CollectMode, EnvLayout, Timestep
from tidal.worker.finite import NonFiniteError
from tidal.worker.rng import stream_seed
from tidal.base.nest import concat, path_name, to_numpy, to_tensor, tree_leaves, tree_map


ACTING_STREAM = 1  # stream_seed's stream of the collector's torch draws (the envs' own seeds come first)


def steps_per_env(n_sample: int, num_envs: int) -> int:
    """Steps each env makes in a collection of at least `n_sample` env steps: ceil(n_sample / num_envs)."""
    return max(1, -(-n_sample // num_envs))


class _Collector:
    """Shared stepping logic: act on the current obs, step the envs, build the batched transition."""

    def __init__(self, env: EnvManager, policy: CollectMode, device: torch.device) -> None:
        self.env = env
        self.policy = policy
        self.device = torch.device(device)
        self.env_step = 0
        self.episodes = EpisodeStats()
        self._obs: Any = None
        self._first = torch.ones(env.num_envs, dtype=torch.bool, device=self.device)  # obs came from a reset
        self._rng: Optional[dict[str, torch.Tensor]] = None  # the acting stream, once seeded

    @property
    def num_envs(self) -> int:
        return self.env.num_envs

    def monitor(self) -> dict[str, float]:
        """Nothing beyond the episodes: a local collector steps in the learner's process."""
        return {}

    def close(self) -> None:
        self.env.close()

    def reset(self, seed: Optional[int] = None) -> None:
        """New episodes in every env; a seed also seeds the policy's acting stream (see `acting_rng`)."""
        self._obs = to_tensor(self.env.reset(seed=seed), self.device)
        self._first = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.device)
        self.policy.reset(None)
        if seed is not None:
            with torch.random.fork_rng(devices=self._cuda_devices()):
                torch.manual_seed(stream_seed(seed, ACTING_STREAM))
                self._rng = self._global_rng()

    @contextmanager
    def acting_rng(self) -> Iterator[None]:
        """Run the block on the collector's own torch stream, then give the global one back.

        Acting then neither shifts the learner's draws nor depends on them, so the same seed acts the
        same in this process or in a Ray worker of its own.
        """
        if self._rng is None:
            yield
            return
        outer = self._global_rng()
        self._set_global_rng(self._rng)
        try:
            yield
        finally:
            self._rng = self._global_rng()
            self._set_global_rng(outer)

    def _cuda_devices(self) -> list[int]:
        return [self.device.index or 0] if self.device.type == 'cuda' else []

    def _global_rng(self) -> dict[str, torch.Tensor]:
        state = {'cpu': torch.get_rng_state()}
        if self.device.type == 'cuda':
            state['cuda'] = torch.cuda.get_rng_state(self.device)
        return state

    def _set_global_rng(self, state: dict[str, torch.Tensor]) -> None:
        torch.set_rng_state(state['cpu'])
        if 'cuda' in state and self.device.type == 'cuda':
            torch.cuda.set_rng_state(state['cuda'], self.device)

    @property
    def obs(self) -> Any:
        """The observations the next step acts on (tensors on the policy's device)."""
        if self._obs is None:
            raise RuntimeError('call reset() before collecting')
        return self._obs

    def _step(self, random: bool) -> tuple[dict[str, Any], Step]:
        obs = self.obs
        return self.advance(self.policy.random_action(obs) if random else self.policy.forward(obs))

    def advance(self, output: dict[str, Any]) -> tuple[dict[str, Any], Step]:
        """Step the envs with the policy's `output` on `obs` (a seed group acts for its seeds together); the
        transition the policy makes of the step, and the step."""
        obs = self.obs
        action = to_numpy(output['action'])
        if action.dtype.kind == 'f' and not np.isfinite(action).all():
            raise NonFiniteError(f'the policy chose a non-finite action at env step {self.env_step}')
        step = self.env.step(action)
        timestep = Timestep(
            next_obs=to_tensor(step.next_obs, self.device),
            reward=torch.as_tensor(step.reward, device=self.device),
            terminated=torch.as_tensor(step.terminated, device=self.device),
            truncated=torch.as_tensor(step.truncated, device=self.device),
            first=self._first,
        )
        transition = self.policy.process_transition(obs, output, timestep)
        # no episode ended: the next obs is the one to act on, converted once
        self._obs = timestep.next_obs if step.next_obs is step.obs else to_tensor(step.obs, self.device)
        done = step.done
        self._first = torch.as_tensor(done, device=self.device)
        if done.any():
            self.policy.reset(np.flatnonzero(done).tolist())
        self.env_step += self.env.num_envs
        self.episodes.add(step.done, step.episode_return, step.episode_length)
        return transition, step

    # ----- exact resume ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Where every env stands: their snapshots, the obs to act on next, the policy's acting state."""
        return {
            'env_step': self.env_step, 'env': self.env.snapshot(),
            'obs': tree_map(lambda x: x.detach().cpu().clone(), self._obs), 'first': self._first.cpu().clone(),
            'episodes': {'returns': list(self.episodes.returns), 'lengths': list(self.episodes.lengths)},
            'policy': self.policy.state_dict(),
            'rng': None if self._rng is None else {key: value.clone() for key, value in self._rng.items()},
        }

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        """Continue the saved episodes exactly; where the envs could not be saved, start new episodes
        (seeded with `fallback_seed`) and return the reason, for the run to report."""
        self.env_step = state['env_step']
        self.episodes = EpisodeStats(list(state['episodes']['returns']), list(state['episodes']['lengths']))
        self.env.reset(seed=fallback_seed)  # the managers restore onto envs that have been reset
        if state.get('rng') is not None:
            self._rng = {key: value.cpu() if key == 'cpu' else value for key, value in state['rng'].items()}
        self.policy.load_state_dict(state['policy'])  # run-level counters (an eps or temperature schedule) too
        if self.env.restore(state['env']):
            self._obs = to_tensor(state['obs'], self.device)
            self._first = state['first'].to(self.device)
            return None
        self.reset(seed=fallback_seed)  # new episodes: the policy drops what it kept of the old ones
        return state['env']['reason']


class SampleCollector(_Collector):
    """Collects at least `n_sample` transitions per call, spread over all envs, for a replay buffer.

    Rows are step-major: env i's k-th step of the call is row k * num_envs + i, so in the buffer each
    env's transitions lie `num_envs` rows apart, which is how sequences are cut out again
    (`ReplayBuffer.sample_sequence`). The policy's sample must keep that layout (`check_sample_rows`).
    """

    _handed: Optional[tuple[bool, dict[str, Any]]] = None

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        """The training samples (by default the transitions) of ceil(n_sample / num_envs) steps of every env.

        With `random`, actions come from the policy's `random_action` (the warm-up before training).
        """
        if self._handed is not None:
            return self._take_handed(random)
        steps = steps_per_env(n_sample, self.env.num_envs)
        with self.acting_rng():
            return self.train_sample([self._step(random)[0] for _ in range(steps)])

    def train_sample(self, transitions: list[dict[str, Any]]) -> dict[str, Any]:
        """The policy's training samples of a collection's transitions (one per step of every env), checked."""
        layout = EnvLayout(self.env.num_envs, len(transitions))
        sample = self.policy.get_train_sample(concat(transitions), layout)
        check_sample_rows(sample, layout, self.policy.cfg.get('type'))
        return sample

    def hand(self, random: bool, sample: dict[str, Any]) -> None:
        """Give the next `collect` this sample: a seed group collects for all its seeds at once before their feeds
        step, asking each feed what its step collects (`Feed.collection`) while its counters are where the step
        finds them."""
        self._handed = (random, sample)

    def _take_handed(self, random: bool) -> dict[str, Any]:
        handed_random, sample = self._handed  # type: ignore[misc]
        self._handed = None
        if handed_random != random:
            raise TidalError(f"a seed group collected {'random' if handed_random else 'policy'} actions for a feed "
                             f"step that asked for {'random' if random else 'policy'} ones: the feed and the group "
                             f"are out of step")
        return sample


def check_sample_rows(sample: Any, layout: EnvLayout, policy: Optional[str]) -> None:
    """Every column of a training sample has one row per collected env step, as the feeds cut, shuffle and
    store it: a column of another shape (a [steps, envs] grid left unflattened) would fail deep in a feed's
    indexing, or be stored misaligned; checked once per collection, where the layout is known."""
    rows = layout.num_envs * layout.steps
    where = f"policy '{policy}': _get_train_sample" if policy else "the policy's _get_train_sample"
    if not isinstance(sample, dict):
        raise PolicyError(f'{where} must return a dict of columns with {rows} rows each, got '
                          f'{type(sample).__name__}')
    for path, column in tree_leaves(sample):
        shape = getattr(column, 'shape', None)
        if shape is None or len(shape) == 0 or shape[0] != rows:
            got = f'shape {list(shape)}' if shape is not None else f'a {type(column).__name__}'
            raise PolicyError(f"{where} returned column '{path_name(path)}' with {got}, expected {rows} rows "
                              f"({layout.steps} steps of {layout.num_envs} envs, step-major: env i's step k is "
                              f"row k * {layout.num_envs} + i)")


class EpisodeCollector(_Collector):
    """Collects whole episodes: `collect(n)` returns a list of `n` time-ordered episodes."""

    def collect(self, n_episode: int, random: bool = False) -> list[dict[str, Any]]:
        with self.acting_rng():
            return self._episodes(n_episode, random)

    def _episodes(self, n_episode: int, random: bool) -> list[dict[str, Any]]:
        running: list[list[dict[str, Any]]] = [[] for _ in range(self.env.num_envs)]
        finished: list[dict[str, Any]] = []
        while len(finished) < n_episode:
            transition, step = self._step(random)
            for i in range(self.env.num_envs):
                running[i].append(_select_env([transition], i))
            for ended in np.flatnonzero(step.done):
                if len(finished) < n_episode:
                    finished.append(concat(running[ended]))
                running[ended] = []
        return finished


def _select_env(transitions: list[dict[str, Any]], index: int) -> dict[str, Any]:
    """Env `index`'s rows of a list of batched transitions, stacked in time order: [T, ...]."""
    return concat([tree_map(lambda column: column[index:index + 1], t) for t in transitions])
