"""Segment trees over priorities: a sum tree to sample in proportion, a min tree for IS weights.

The tree is a flat numpy array in heap order (root at 1, children of node i at 2i and 2i+1, leaves
at ``[size, 2 * size)`` with ``size`` the capacity rounded up to a power of two). Batches of leaves
are updated and batches of prefix sums are looked up by walking the tree one level at a time for
the whole batch, so a batch of 256 costs ``depth`` vectorised steps, not 256 Python walks.
"""
from __future__ import annotations

import operator
from typing import Callable

import numpy as np


def last_write_wins(leaves: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop all but the last occurrence of each leaf; numpy's fancy assignment leaves it undefined."""
    if leaves.size < 2:
        return leaves, values
    reversed_leaves = leaves[::-1]
    unique_leaves, first_in_reversed = np.unique(reversed_leaves, return_index=True)
    return unique_leaves, values[::-1][first_in_reversed]


class SegmentTree:
    """Every inner node holds `combine` of its two children; empty leaves hold `neutral`."""

    def __init__(self, capacity: int, combine: np.ufunc, combine_scalars: Callable[[float, float], float],
                 neutral: float) -> None:
        if capacity < 1:
            raise ValueError(f'a segment tree needs at least one leaf, got capacity {capacity}')
        self.capacity = capacity
        self._combine = combine
        self._combine_scalars = combine_scalars
        self._neutral = neutral
        self._depth = (capacity - 1).bit_length()  # levels below the root
        self._leaf_offset = 1 << self._depth
        self._nodes = np.full(2 * self._leaf_offset, neutral, dtype=np.float64)
        self._level_shifts = np.arange(1, self._depth + 1)[:, None]

    @property
    def root(self) -> float:
        return float(self._nodes[1])

    def __getitem__(self, leaves: np.ndarray) -> np.ndarray:
        return self._nodes[np.asarray(leaves) + self._leaf_offset]

    def update(self, leaves: np.ndarray, values: np.ndarray) -> None:
        """Set a batch of leaves (last write wins for repeats) and recompute their ancestors."""
        leaves = np.asarray(leaves, dtype=np.int64).reshape(-1)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if leaves.shape != values.shape:
            raise ValueError(f'{leaves.size} leaves but {values.size} values')
        if leaves.size == 0:
            return
        if leaves.min() < 0 or leaves.max() >= self.capacity:
            raise IndexError(f'leaf index out of range [0, {self.capacity}): '
                             f'min {leaves.min()}, max {leaves.max()}')
        leaves, values = last_write_wins(leaves, values)
        node = leaves + self._leaf_offset
        self._nodes[node] = values
        # the ancestors of every leaf, one row per level from the parents up to the root
        ancestors = node >> self._level_shifts
        left = ancestors << 1
        right = left + 1
        for level in range(self._depth):
            # recomputing parents from both children (rather than adding deltas) keeps every
            # node exact, also when several updated leaves share a parent
            self._nodes[ancestors[level]] = self._combine(self._nodes[left[level]], self._nodes[right[level]])

    def update_range(self, first: int, values: np.ndarray) -> None:
        """Set the contiguous leaves first, first + 1, ...; cheaper than `update` for appends."""
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if first < 0 or first + values.size > self.capacity:
            raise IndexError(f'leaves [{first}, {first + values.size}) out of range [0, {self.capacity})')
        if values.size == 0:
            return
        low = first + self._leaf_offset
        high = low + values.size  # exclusive
        self._nodes[low:high] = values
        while low > 1:
            low, high = low >> 1, ((high - 1) >> 1) + 1
            if high - low == 1:
                break
            self._combine(self._nodes[2 * low:2 * high:2], self._nodes[2 * low + 1:2 * high:2],
                          out=self._nodes[low:high])
        else:
            return
        # from here up one node per level (all of it for a single append): scalars beat array calls
        nodes, combine = self._nodes, self._combine_scalars
        while low >= 1:
            nodes[low] = combine(nodes[2 * low], nodes[2 * low + 1])
            low >>= 1

    def leaf_values(self, count: int) -> np.ndarray:
        """A copy of the first `count` leaves."""
        return self._nodes[self._leaf_offset:self._leaf_offset + count].copy()

    def rebuild(self, values: np.ndarray) -> None:
        """Set the first `len(values)` leaves, empty the rest and recompute the whole tree."""
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if values.size > self.capacity:
            raise ValueError(f'{values.size} values for a tree of {self.capacity} leaves')
        self._nodes.fill(self._neutral)
        self._nodes[self._leaf_offset:self._leaf_offset + values.size] = values
        for level in range(self._depth - 1, -1, -1):
            first, end = 1 << level, 2 << level
            self._nodes[first:end] = self._combine(self._nodes[2 * first:2 * end:2],
                                                   self._nodes[2 * first + 1:2 * end:2])


class SumTree(SegmentTree):
    """Leaves are priorities; the root is their total, and a prefix sum finds a leaf by mass."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, np.add, operator.add, 0.0)

    @property
    def total(self) -> float:
        return self.root

    def find_prefix_sum(self, mass: np.ndarray) -> np.ndarray:
        """For each m in `mass` (in [0, total)), the leaf i with sum(p[:i]) <= m < sum(p[:i + 1])."""
        mass = np.array(mass, dtype=np.float64).reshape(-1)  # a copy: it is reduced in place
        node = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self._depth):
            node <<= 1  # left child
            left_mass = self._nodes[node]
            go_right = mass >= left_mass
            mass -= left_mass * go_right
            node += go_right
        return node - self._leaf_offset


class MinTree(SegmentTree):
    """The root is the smallest priority stored; empty leaves count as +inf."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, np.minimum, min, np.inf)

    @property
    def min(self) -> float:
        return self.root
