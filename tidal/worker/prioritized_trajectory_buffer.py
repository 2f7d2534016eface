"""Prioritized sampling of trajectory starts (Schaul et al. 2016, arXiv 1511.05952, as MuZero uses it).

Each (env, slot) of the `TrajectoryBuffer` rings has one priority leaf, ``env * capacity_per_env +
slot``, in a sum tree (sampling) and a min tree (importance weights), like `PrioritizedReplayBuffer`:
a start is drawn with probability P(i) = p_i^alpha / sum_k p_k^alpha, new steps get the largest
p^alpha seen, and w_i = (N P(i))^-beta / max_j w_j with beta annealed to 1. What the priority measures
(MuZero: the value error of the unroll from that start) is the learner's business.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tidal.base.errors import CheckpointError
from tidal.worker.prioritized_buffer import (annealed_beta, check_prioritized_config, check_prioritized_state,
                                             draw_proportional, importance_weights)
from tidal.worker.replay_buffer import ReplayBufferError
from tidal.worker.sum_tree import MinTree, SumTree
from tidal.worker.trajectory_buffer import TrajectoryBuffer, _positive_int, _stored_slots


class PrioritizedTrajectoryBuffer(TrajectoryBuffer):
    """A trajectory buffer whose `sample_weighted` draws starts by priority and returns IS weights.

    The trees store p^alpha, so `update_priority` takes raw priorities. `sample_positions` stays uniform.
    """

    def __init__(self,
                 num_envs: int,
                 capacity_per_env: int,
                 alpha: float,
                 beta: float,
                 anneal_step: int = 0,
                 device: str | torch.device = 'cpu',
                 seed: int | None = None) -> None:
        super().__init__(num_envs, capacity_per_env, device=device, seed=seed)
        check_prioritized_config(alpha, beta, anneal_step)
        self._alpha = float(alpha)
        self._beta_start = float(beta)
        self._anneal_step = int(anneal_step)
        self._sample_count = 0  # sample_weighted() calls so far: the position in the beta schedule
        self._max_priority = 1.0  # largest p^alpha seen; given to new steps
        self._sum_tree = SumTree(self._num_envs * self._capacity)
        self._min_tree = MinTree(self._num_envs * self._capacity)

    @property
    def beta(self) -> float:
        """The beta the next `sample_weighted` uses: linear from `beta` to 1 over `anneal_step` samples."""
        return annealed_beta(self._beta_start, self._anneal_step, self._sample_count)

    def extend(self, batch: dict) -> None:
        """Append step-major rows as `TrajectoryBuffer.extend`; each new step gets the max priority."""
        before = self._current.to('cpu', copy=True)  # extend adds to _current in place
        super().extend(batch)
        after = self._current.cpu()
        kept = int((after - before).clamp(max=self._capacity).max())  # every env gets the same steps
        if kept == 0:
            return
        position = after[:, None] - kept + torch.arange(kept)
        leaves = (torch.arange(self._num_envs)[:, None] * self._capacity + position % self._capacity).numpy()
        priority = np.full(leaves.size, self._max_priority)
        self._sum_tree.update(leaves, priority)
        self._min_tree.update(leaves, priority)

    def sample_weighted(self, batch_size: int, length: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(env_ids [B], start positions [B], IS weight [B] float32), starts drawn by priority among the
        pairs whose `length` steps are all stored.

        For length > 1 the newest `length - 1` positions of each env are not starts: their leaves are
        set to 0 in the sum tree for the draw and restored after it (exactly: parents are recomputed
        from their children), so P(i) is p_i^alpha over the valid starts' total. The weights are
        normalised by the largest weight over every stored step (the min tree), a bound of at most
        the valid starts' largest weight, so they stay in (0, 1].
        """
        batch_size = _positive_int('batch_size', batch_size)
        current, oldest, starts = self._valid_starts(length)
        tail = (current - oldest - starts).numpy()  # per env, stored positions that are not starts
        env = np.repeat(np.arange(self._num_envs), tail)
        back = np.arange(env.size) - np.repeat(np.cumsum(tail) - tail, tail)  # 0 for the newest
        masked = env * self._capacity + (current.numpy()[env] - 1 - back) % self._capacity
        held = self._sum_tree[masked]
        self._sum_tree.update(masked, np.zeros(masked.size))
        try:
            leaves = draw_proportional(self._sum_tree, batch_size, self._generator)
            weight = importance_weights(self._sum_tree, self._min_tree, leaves, self.beta)
        finally:
            self._sum_tree.update(masked, held)
        self._sample_count += 1
        env_ids = torch.from_numpy(leaves // self._capacity)
        slot = torch.from_numpy(leaves % self._capacity)
        positions = oldest[env_ids] + (slot - oldest[env_ids]) % self._capacity  # the step held in slot
        return env_ids.to(self._device), positions.to(self._device), torch.from_numpy(weight).to(self._device)

    def update_priority(self, env_ids: Any, positions: Any, priority: Any) -> None:
        """Set the priorities of sampled starts (finite, > 0); for a repeated pair the last one wins.

        Pairs whose slot has been overwritten since they were sampled are skipped: the priority was
        measured on a step the buffer no longer holds.
        """
        env, position = self._index_pairs(env_ids, positions)
        env, position = env.reshape(-1), position.reshape(-1)
        raw = torch.as_tensor(priority).detach().reshape(-1).cpu().numpy().astype(np.float64)
        if raw.size != env.numel():
            raise ReplayBufferError(f'update_priority got {env.numel()} (env, position) pairs but {raw.size} '
                                    f'priorities')
        bad = ~(np.isfinite(raw) & (raw > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = ('a NaN' if np.isnan(raw[i]) else 'an infinite' if np.isinf(raw[i]) else
                    'a negative' if raw[i] < 0 else 'a zero')
            raise ReplayBufferError(f'update_priority got {what} priority ({raw[i]}) at index {i}; priorities '
                                    f'must be finite and > 0 (add a small eps to the error)')
        overwritten = (position >= 0) & (position < self._current[env] - self._capacity)
        env, position = env[~overwritten], position[~overwritten]
        self._check_stored(env, position)  # what is left must be stored: never-added or negative raise
        leaves = (env * self._capacity + position % self._capacity).cpu().numpy()
        if leaves.size == 0:
            return
        scaled = raw[~overwritten.cpu().numpy()]**self._alpha
        self._max_priority = max(self._max_priority, float(scaled.max()))
        self._sum_tree.update(leaves, scaled)
        self._min_tree.update(leaves, scaled)

    # checkpoints ---------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The base state plus p^alpha of the stored slots [num_envs, stored], max priority, beta counter."""
        sd = super().state_dict()
        stored = _stored_slots(self._current, self._capacity)
        leaves = self._sum_tree.leaf_values(self._num_envs * self._capacity).reshape(self._num_envs, -1)
        sd.update(
            priority=torch.from_numpy(np.ascontiguousarray(leaves[:, :stored])),
            max_priority=torch.tensor(self._max_priority, dtype=torch.float64),
            sample_count=self._sample_count,
            alpha=torch.tensor(self._alpha, dtype=torch.float64),
        )
        return sd

    def load_state_dict(self, sd: dict) -> None:
        check_prioritized_state(sd, self._alpha, 'TrajectoryBuffer')
        priority, episode_end = sd['priority'], sd.get('episode_end')
        # the base checks episode_end's shape [num_envs, stored]; the priorities must match it
        if isinstance(episode_end, torch.Tensor) and (not isinstance(priority, torch.Tensor)
                                                      or priority.shape != episode_end.shape):
            raise CheckpointError(f"prioritized trajectory buffer state: 'priority' does not hold one value "
                                  f'per stored step ({tuple(episode_end.shape)})')
        super().load_state_dict(sd)
        held = torch.arange(self._capacity) < self._current.cpu().clamp(max=self._capacity)[:, None]
        leaves = np.zeros((self._num_envs, self._capacity))
        leaves[:, :priority.shape[1]] = priority.to(torch.float64).numpy()
        leaves[~held.numpy()] = 0.0
        self._sum_tree.rebuild(leaves.reshape(-1))
        self._min_tree.rebuild(np.where(held.numpy(), leaves, np.inf).reshape(-1))
        self._max_priority = float(sd['max_priority'])
        self._sample_count = int(sd['sample_count'])
