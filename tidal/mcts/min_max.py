"""Per-tree bounds of the Q values a search has seen (MuZero's MinMaxStats, arXiv 1911.08265, app. B).

pUCT adds Q to an exploration bonus of order one, so in environments whose returns have no known
bounds MuZero rescales Q to [0, 1] by the smallest and largest Q seen so far in the same tree. Each
tree of a batch keeps its own bounds, so it is searched as if it were alone.

The range is floored at `delta` (LightZero's `value_delta_max`): a fresh model predicts nearly the
same value everywhere, and stretching Q values that differ by 1e-5 to the whole [0, 1] would make
the search follow rounding noise instead of the priors. With the floor, differences well below
`delta` stay small next to the exploration term. delta = 0 is the paper's normalisation.
"""
from __future__ import annotations

import numpy as np


class MinMaxStats:
    """Bounds [B] of B trees, empty (min = +inf, max = -inf) until their first update.

    The search's kernels read and widen `minimum` and `maximum` in place; the methods are for Python callers.
    """

    def __init__(self, batch_size: int, delta: float = 0.0) -> None:
        self.minimum = np.full(batch_size, np.inf)
        self.maximum = np.full(batch_size, -np.inf)
        self.delta = float(delta)  # floor of the normalising range max - min

    def update(self, trees: np.ndarray, q: np.ndarray) -> None:
        """Widen the bounds of tree trees[i] to include q[i], for all i (a tree id may repeat)."""
        np.minimum.at(self.minimum, trees, q)
        np.maximum.at(self.maximum, trees, q)

    def normalize(self, trees: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(Q - min) / max(max - min, delta) per row of `q` [k, A], row i in tree trees[i].

        A tree whose max <= min (nothing or a single value seen) has no scale yet: its Q stays as is.
        """
        offset, scale = self.affine()
        return (q - offset[trees, None]) * scale[trees, None]

    def affine(self) -> tuple[np.ndarray, np.ndarray]:
        """(offset [B], scale [B]) with normalize(Q) = (Q - offset) * scale: (min, 1 / max(span, delta)), or (0, 1)."""
        span = self.maximum - self.minimum
        has_scale = span > 0
        return np.where(has_scale, self.minimum, 0.0), 1.0 / np.where(has_scale, np.maximum(span, self.delta), 1.0)
