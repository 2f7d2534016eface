"""`tidal.load`: a trained run as an `Agent` that acts in a few lines, as Stable-Baselines3's `PPO.load(path)` and
`model.predict(obs)` do: the env's observations in, the env's actions out.

The agent acts through the run's own eval mode, so what it does is what `tidal eval` scored: the observation
normalisation the run learned, the most likely action (or a sampled one), and per-env acting state (TAAC's
trajectory). Its continuous actions are mapped onto the env's bounds as tidal's env adapter maps the eval mode's,
so they go to `gymnasium.make(env_id)` as they are.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import numpy as np
import torch
from gymnasium import spaces as gym_spaces

from tidal.base.errors import TidalError
from tidal.base.nest import to_tensor
from tidal.entry.saved_run import EnvInterface, env_interface, saved_policy, saved_run
from tidal.policies.base import Policy


class ObservationError(TidalError, ValueError):
    """An observation whose shape is neither the env's nor a batch of it."""


def load(source: str | os.PathLike, device: str = 'cpu') -> Agent:
    """The agent of a run folder or of a checkpoint file inside one, on `device` ('cpu', 'cuda', 'cuda:1').

    A run folder gives its ckpt/best.pt (the best evaluated policy) where there is one, else ckpt/latest.pt, as
    `tidal eval` and `tidal export` pick; a checkpoint file gives its own weights under the config.yaml of the run
    folder it lies in. Checkpoints load with `torch.load(weights_only=True)`."""
    run = saved_run(source, 'tidal.load', device)
    with torch.random.fork_rng(devices=[]):  # building draws initial weights: the caller's torch state stays as it was
        policy = saved_policy(run)
    return Agent(policy, env_interface(run.cfg), run.run_dir, run.checkpoint, run.cfg.seed)


class Agent:
    """A trained policy acting on the env's observations: `act(obs)` for one observation or a batch of them.

    Acting state (TAAC's trajectory) is kept per row of a batch, row i being env i, and carries over from one call
    to the next while the batch size stays the same: call `reset()` when episodes start again (`reset(env_ids)` for
    some rows); a call with another batch size starts every row afresh. Sampled actions (and TAAC's epsilon-greedy
    draws) come from the agent's own generator, seeded with the run's seed at load and by `seed`."""

    def __init__(self, policy: Policy, env: EnvInterface, run_dir: Path, checkpoint: Path, seed: int) -> None:
        self.policy = policy
        self.run_dir, self.checkpoint = run_dir, checkpoint
        self.observation_space = env.observation_space
        self._bounds = env.bounds
        self._eval = policy.eval_mode
        self.seed(seed)

    def act(self, obs: Any, deterministic: bool = True) -> Any:
        """The env's action for one observation (an int for a discrete action), or the batch of them for a batch
        [N, ...]. `deterministic`: the eval mode's most likely action (TAAC's epsilon-greedy, as its eval acts);
        False: the action sampled as the run collected, less exploration on top (DQN's eval stays greedy)."""
        batch, one = observation_batch(obs, self.observation_space, self.run_dir)
        eval_cfg = self.policy.cfg.eval
        configured, eval_cfg.deterministic = eval_cfg.deterministic, deterministic
        try:
            with torch.no_grad():
                action = self._eval.forward(to_tensor(batch, self.policy.device))['action']
        finally:
            eval_cfg.deterministic = configured
        actions = action.cpu().numpy()
        if self._bounds is not None:
            actions = self._bounds.env_action(actions).astype(self._bounds.env_low.dtype)
        if not one:
            return actions
        first = actions[0]
        return int(first) if first.ndim == 0 and np.issubdtype(first.dtype, np.integer) else first

    def reset(self, env_ids: Optional[Iterable[int]] = None) -> None:
        """Start new episodes for the rows `env_ids` of the batch (None: every row): their acting state restarts."""
        self._eval.reset(None if env_ids is None else list(env_ids))

    def seed(self, seed: int) -> None:
        """Reseed the generator that sampled actions draw from."""
        self._eval.seed(seed)


def observation_batch(obs: Any, space: gym_spaces.Space, run_dir: Path) -> tuple[Any, bool]:
    """(`obs` as a batch [N, ...] in the dtypes of `space`, whether it was one observation), told apart by their
    shapes; a dict observation (an action mask beside it, a multi-agent state) entry by entry."""
    if isinstance(space, gym_spaces.Dict):
        if not isinstance(obs, Mapping) or set(obs) != set(space.spaces):
            given = sorted(obs) if isinstance(obs, Mapping) else type(obs).__name__
            raise ObservationError(f"observation {given} does not fit run '{run_dir}': its env gives dicts of "
                                   f'{sorted(space.spaces)}')
        parts = {key: _array(obs[key], part, f"observation '{key}'", run_dir) for key, part in space.spaces.items()}
        leading = {batch_shape for _, batch_shape in parts.values()}
        if len(leading) > 1:
            raise ObservationError(f"observation entries of run '{run_dir}' disagree on the batch: "
                                   + ', '.join(f"'{key}' {shape}" for key, (_, shape) in parts.items()))
        one = leading == {()}
        return {key: array[None] if one else array for key, (array, _) in parts.items()}, one
    array, batch_shape = _array(obs, space, 'observation', run_dir)
    return (array[None], True) if batch_shape == () else (array, False)


def _array(value: Any, space: gym_spaces.Space, what: str, run_dir: Path) -> tuple[np.ndarray, tuple[int, ...]]:
    """(`value` as an array of the space's dtype, its batch shape: () or (N,))."""
    array = np.asarray(value, dtype=space.dtype)
    shape = tuple(space.shape or ())
    if array.shape == shape:
        return array, ()
    if array.ndim == len(shape) + 1 and array.shape[1:] == shape:
        return array, array.shape[:1]
    batch = ', '.join(['N', *map(str, shape)])
    raise ObservationError(f"{what} of shape {array.shape} does not fit run '{run_dir}': its env gives {shape} (one "
                           f'observation) or ({batch}) (a batch)')
