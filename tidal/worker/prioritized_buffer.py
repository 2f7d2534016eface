"""Proportional prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay", arXiv 1511.05952).

Transition i is sampled with probability P(i) = p_i^alpha / sum_k p_k^alpha (eq. 1), where p_i is
|TD error| + eps from its last update, and new transitions get the largest priority seen so far so
each is replayed at least once. The bias this adds is corrected by importance-sampling weights
w_i = (N * P(i))^-beta / max_j w_j, with beta annealed linearly from its start value to 1 over `anneal_step`
samples, so that the correction is full by the end of training (sec. 3.4); `anneal_step=0` keeps beta fixed.

The module-level functions (hyperparameter checks, beta schedule, stratified draws, weights, saved
state checks) are shared with `PrioritizedTrajectoryBuffer`, which keeps one priority per (env, slot).
"""
from __future__ import annotations

import numpy as np
import torch

from tidal.base.errors import CheckpointError, ConfigError
from tidal.base.device import to_device
from tidal.worker.replay_buffer import ReplayBuffer, ReplayBufferError
from tidal.worker.sum_tree import MinTree, SumTree


def check_prioritized_config(alpha: float, beta: float, anneal_step: int) -> None:
    """Raise a ConfigError naming the first hyperparameter out of range."""
    if alpha < 0:
        raise ConfigError(f'prioritized replay alpha must be >= 0, got {alpha}')
    if not 0 <= beta <= 1:
        raise ConfigError(f'prioritized replay beta must be in [0, 1], got {beta}')
    if anneal_step < 0:
        raise ConfigError(f'prioritized replay anneal_step must be >= 0 (0 keeps beta fixed), '
                          f'got {anneal_step}')


def annealed_beta(beta: float, anneal_step: int, sample_count: int) -> float:
    """Beta after `sample_count` samples: linear from `beta` to 1 over `anneal_step` samples (0: fixed)."""
    if anneal_step == 0:
        return beta
    progress = min(1.0, sample_count / anneal_step)
    return beta + (1.0 - beta) * progress


def draw_proportional(sum_tree: SumTree, batch_size: int, generator: torch.Generator) -> np.ndarray:
    """Stratified proportional sampling: one leaf drawn in each of `batch_size` equal slices of the mass.

    Leaves holding 0 are never returned: float rounding can carry a draw at the end of a leaf's mass
    past it into empty leaves, and such a draw goes back to the last non-empty leaf before them.
    """
    uniform = torch.rand(batch_size, generator=generator, dtype=torch.float64).numpy()
    segment = sum_tree.total / batch_size
    leaves = sum_tree.find_prefix_sum((np.arange(batch_size) + uniform) * segment)
    empty = sum_tree[leaves] == 0
    if empty.any():  # rare: the O(capacity) scan is fine here
        held = np.flatnonzero(sum_tree.leaf_values(sum_tree.capacity))
        before = np.searchsorted(held, leaves[empty], side='right') - 1
        leaves[empty] = held[np.maximum(before, 0)]
    return leaves


def importance_weights(sum_tree: SumTree, min_tree: MinTree, leaves: np.ndarray, beta: float) -> np.ndarray:
    """float32 w_i / max_j w_j for the drawn leaves, the max taken over every stored leaf."""
    # w_i / max_j w_j = (N P(i))^-beta / (N P_min)^-beta = (p_min / p_i)^beta
    return ((min_tree.min / sum_tree[leaves])**beta).astype(np.float32)


def check_prioritized_state(sd: dict, alpha: float, uniform_name: str) -> None:
    """The priority entries are present and were saved with this alpha (the trees hold p^alpha)."""
    missing = [key for key in ('priority', 'max_priority', 'sample_count', 'alpha') if key not in sd]
    if missing:
        raise CheckpointError(f'prioritized replay state is missing {missing}; was it saved by a '
                              f'uniform {uniform_name}?')
    saved_alpha = float(sd['alpha'])
    if saved_alpha != alpha:
        raise CheckpointError(f'prioritized replay state was saved with alpha={saved_alpha}, this buffer '
                              f'has alpha={alpha}; the stored priorities are p^alpha for the saved alpha')


class PrioritizedReplayBuffer(ReplayBuffer):
    """A replay buffer that samples by priority and returns 'weight' with every batch.

    The trees store p^alpha, so `update_priority` takes raw priorities (e.g. |TD error|).
    """

    reserved_keys = ('index', 'weight')

    def __init__(self,
                 size: int,
                 alpha: float = 0.6,
                 beta: float = 0.4,
                 anneal_step: int = 0,
                 device: str | torch.device = 'cpu',
                 seed: int | None = None,
                 eps: float = 1e-6) -> None:
        super().__init__(size, device=device, seed=seed)
        check_prioritized_config(alpha, beta, anneal_step)
        if eps <= 0:
            raise ConfigError(f'prioritized replay eps must be > 0 so that every transition can still be '
                              f'sampled, got {eps}')
        self._alpha = float(alpha)
        self._beta_start = float(beta)
        self._anneal_step = int(anneal_step)
        self._eps = float(eps)
        self._sample_count = 0  # sample() calls so far: the position in the beta schedule
        self._max_priority = 1.0  # largest p^alpha seen; given to new transitions
        self._sum_tree = SumTree(self.capacity)
        self._min_tree = MinTree(self.capacity)

    @property
    def beta(self) -> float:
        """The beta the next `sample` uses: linear from `beta` to 1 over `anneal_step` samples."""
        return annealed_beta(self._beta_start, self._anneal_step, self._sample_count)

    def extend(self, batch: dict) -> None:
        start, count = self._write(batch)
        head = min(count, self.capacity - start)  # the write may wrap around the ring
        for first, length in ((start, head), (0, count - head)):
            if length:
                priority = np.full(length, self._max_priority)
                self._sum_tree.update_range(first, priority)
                self._min_tree.update_range(first, priority)

    def sample(self, batch_size: int) -> dict:
        """Stratified proportional sampling: one draw in each of `batch_size` equal slices of the mass."""
        self._check_sample(batch_size)
        slots = draw_proportional(self._sum_tree, batch_size, self._generator)
        weight = importance_weights(self._sum_tree, self._min_tree, slots, self.beta)
        self._sample_count += 1
        batch = self.sample_index(torch.from_numpy(slots))
        batch['weight'] = to_device(torch.from_numpy(weight), self.device)
        return batch

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Set the priorities of sampled slots, e.g. to |TD error|; for a repeated slot the last one wins."""
        slots = torch.as_tensor(index).detach().reshape(-1).cpu().numpy().astype(np.int64, copy=False)
        raw = torch.as_tensor(priority).detach().reshape(-1).cpu().numpy().astype(np.float64)
        if slots.shape != raw.shape:
            raise ReplayBufferError(f'update_priority got {slots.size} indices but {raw.size} priorities')
        if slots.size == 0:
            return
        if slots.min() < 0 or slots.max() >= len(self):
            raise ReplayBufferError(f'update_priority index out of range [0, {len(self)}): '
                                    f'min {slots.min()}, max {slots.max()}')
        if not np.isfinite(raw).all():
            raise ReplayBufferError('update_priority got a NaN or infinite priority; check the TD errors')
        scaled = (np.abs(raw) + self._eps)**self._alpha
        self._max_priority = max(self._max_priority, float(scaled.max()))
        self._sum_tree.update(slots, scaled)
        self._min_tree.update(slots, scaled)

    def state_dict(self) -> dict:
        sd = super().state_dict()
        sd.update(
            priority=torch.from_numpy(self._sum_tree.leaf_values(len(self))),  # p^alpha of each slot
            max_priority=self._max_priority,
            sample_count=self._sample_count,
            alpha=self._alpha,
        )
        return sd

    def load_state_dict(self, sd: dict) -> None:
        check_prioritized_state(sd, self._alpha, 'ReplayBuffer')
        priority = torch.as_tensor(sd['priority'], dtype=torch.float64).reshape(-1).numpy()
        if 'size' in sd and priority.size != sd['size']:
            raise CheckpointError(f"prioritized replay state holds {priority.size} priorities for "
                                  f"{sd['size']} transitions")
        super().load_state_dict(sd)
        self._sum_tree.rebuild(priority)
        self._min_tree.rebuild(priority)
        self._max_priority = float(sd['max_priority'])
        self._sample_count = int(sd['sample_count'])
