"""B search trees in preallocated arrays, and the steps of a simulation on all of them at once.

A search of S simulations adds at most one node to every tree per simulation, so node ids run 0..S
(0 is the root) and simulation k creates node k in every tree that adds one (all of them, unless a
descent ends at a game-over node). Statistics sit on edges (node, action), as in the paper: N(s, a)
visits, W(s, a) the sum of the discounted returns backed up through the edge (so Q(s, a) = W / N =
R(s, a) + discount * mean value below), R(s, a) the model's reward for the transition, P(s, a) the
prior, and the child's node id (-1 = not expanded yet). Per node, V(s) is the model's value when the
node was added, and a flag marks the nodes the model predicts to be game over: a descent stops at
the edge into one and backs its V(s) up again, so such a node is never expanded.

The statistics are float64 numpy arrays [B, S + 1, A] on the CPU, walked by the compiled kernels of
`tidal.mcts.kernels`: a simulation is one kernel call to select, one model call, one kernel call to
expand and back up, whatever B and the depth of the trees. Only the latents are torch tensors, on the
device of the model that made them, gathered per simulation by one index op.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from tidal.mcts import kernels
from tidal.mcts.min_max import MinMaxStats

_NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64)  # latent dtypes with a numpy view


class Tree:
    """B trees of `num_simulations + 1` nodes over A actions, each holding its root after construction.

    `root_legal` [B, A] (None = all legal) applies at the root only: illegal root actions are never
    selected. Inner nodes are latent states of the model, where every action is legal. Q is min-max
    normalised per tree with the range floored at `min_max_delta` (see `MinMaxStats`).
    """

    def __init__(self, root_latent: torch.Tensor, root_prior: np.ndarray, root_estimate: np.ndarray,
                 num_simulations: int, root_legal: Optional[np.ndarray] = None, min_max_delta: float = 0.0) -> None:
        batch_size, num_actions = root_prior.shape
        self.batch_size, self.num_actions, self.capacity = batch_size, num_actions, num_simulations + 1
        shape = (batch_size, self.capacity, num_actions)
        self.latents = root_latent.new_empty((batch_size, self.capacity, *root_latent.shape[1:]))
        self.latents[:, 0] = root_latent
        # one allocation for the four edge statistics (a search of one root is dominated by fixed costs)
        self.prior, self.reward, self.visits, self.value_sum = np.zeros((4, *shape))  # visits: float counts
        self.prior[:, 0] = root_prior
        self.children = np.full(shape, -1, dtype=np.int64)
        self.node_value = np.zeros((batch_size, self.capacity))  # the model's value of each node when added
        self.node_value[:, 0] = root_estimate
        self.game_over = np.zeros((batch_size, self.capacity), dtype=bool)  # never set at the root
        self._no_game_over = np.zeros(batch_size, dtype=bool)
        self.root_estimate = np.asarray(root_estimate, dtype=np.float64)  # the model's value of each root
        self.root_illegal = None if root_legal is None else ~np.asarray(root_legal, dtype=bool)
        self.min_max = MinMaxStats(batch_size, min_max_delta)
        self.num_nodes = 1
        # the path of the last `select`, per tree: nodes and actions from the root, and its length
        self.path_nodes, self.path_actions = np.zeros((2, batch_size, self.capacity), dtype=np.int64)
        self.path_length = np.zeros(batch_size, dtype=np.int64)
        self._illegal = (np.zeros((batch_size, num_actions), dtype=bool) if self.root_illegal is None
                         else np.ascontiguousarray(self.root_illegal))
        self._latent_rows = self.latents.view(batch_size * self.capacity, *root_latent.shape[1:])
        self._on_cpu = self.latents.device.type == 'cpu'
        # on the CPU, numpy views of the latents: gathering and storing through them costs a third of torch's ops
        self._latent_array: Optional[np.ndarray] = None
        if self._on_cpu and self.latents.dtype in _NUMPY_DTYPES:
            self._latent_array = self.latents.numpy()
        self._latent_row_array = None if self._latent_array is None else self._latent_rows.numpy()

    def puct_scores(self, trees: np.ndarray, nodes: np.ndarray, pb_c_init: float, pb_c_base: float,
                    at_root: bool = False) -> np.ndarray:
        """pUCT score [k, A] of every action at node nodes[i] of tree trees[i] (MuZero app. B, eq. 2).

        score = Qnorm(s, a) + P(s, a) sqrt(N(s)) / (1 + N(s, a)) (c1 + log((N(s) + c2 + 1) / c2)),
        N(s) = 1 + sum_b N(s, b): the node's own evaluation (its expansion, or the root's initial inference)
        counts as a visit, as the pseudocode counts it at inner nodes. Counting only edge visits would make
        sqrt(N(s)) = 0 at a fresh node, so its first choice would ignore the priors (action 0 by tie).
        An unvisited edge has Qnorm = 0, the worst value seen once the tree has a scale (the pseudocode's
        choice), so untried actions compete through their prior alone. With `at_root`, illegal root
        actions score -inf.
        """
        return kernels.puct_scores(self.prior, self.visits, self.value_sum, self._illegal, self.min_max.minimum,
                                   self.min_max.maximum, self.min_max.delta, np.asarray(trees, dtype=np.int64),
                                   np.asarray(nodes, dtype=np.int64), float(pb_c_init), float(pb_c_base), at_root)

    def select(self, pb_c_init: float, pb_c_base: float) -> tuple[np.ndarray, np.ndarray]:
        """Descend every tree by pUCT (ties: lowest action) to its first unexpanded edge, or to the edge into a
        game-over node (whose model call then goes unused: the trees are searched as one batch).

        Returns each tree's leaf edge as (latent row [B] = tree * capacity + parent node, action [B]),
        fresh arrays; the paths stay in `path_nodes`, `path_actions` and `path_length` for the backup.
        """
        if self.num_nodes >= self.capacity:
            raise IndexError(f'the trees are full: {self.capacity} nodes, so {self.capacity - 1} simulations')
        leaf_rows = np.empty(self.batch_size, dtype=np.int64)
        leaf_actions = np.empty(self.batch_size, dtype=np.int64)
        kernels.select(self.prior, self.visits, self.value_sum, self.children, self.game_over, self._illegal,
                       self.min_max.minimum, self.min_max.maximum, self.min_max.delta, pb_c_init, pb_c_base,
                       self.path_nodes, self.path_actions, self.path_length, leaf_rows, leaf_actions)
        return leaf_rows, leaf_actions

    def leaf_inputs(self, leaf_rows: np.ndarray, leaf_actions: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's input for each leaf edge: (parent latent [B, ...], action [B] long)."""
        if self._latent_row_array is not None:
            return torch.from_numpy(self._latent_row_array.take(leaf_rows, axis=0)), torch.from_numpy(leaf_actions)
        rows, actions = torch.from_numpy(leaf_rows), torch.from_numpy(leaf_actions)
        if not self._on_cpu:
            rows, actions = rows.to(self.latents.device), actions.to(self.latents.device)
        return self._latent_rows.index_select(0, rows), actions

    def expand_and_backup(self, latent: torch.Tensor, reward: np.ndarray, value: np.ndarray, logits: np.ndarray,
                          discount: float, game_over: Optional[np.ndarray] = None) -> None:
        """Add one node per tree behind its selected edge and back the leaf values [B] up the paths.

        The node gets `latent` [B, ...], its edge the reward [B], the prior softmax(logits [B, A]) and the
        game-over flag [B] bool (None: no node is game over); then G = R(edge) + discount * G, N += 1,
        W += G from the new edge to the root, and every updated Q = W / N widens its tree's min-max bounds.
        A tree whose selected edge leads to a game-over node adds nothing (node slot `num_nodes` stays
        unused there) and backs up that node's stored value.
        """
        node = self.num_nodes
        if self._latent_array is not None and latent.device.type == 'cpu' and latent.dtype == self.latents.dtype:
            self._latent_array[:, node] = latent.detach().numpy()
        else:
            self.latents[:, node] = latent
        kernels.expand_and_backup(self.prior, self.reward, self.visits, self.value_sum, self.children,
                                  self.node_value, self.game_over, self.min_max.minimum, self.min_max.maximum,
                                  self.path_nodes, self.path_actions, self.path_length, node, reward, value, logits,
                                  self._no_game_over if game_over is None else game_over, discount)
        self.num_nodes += 1

    def root_statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(root visits [B, A], root mean value [B], root Q [B, A] with 0 where unvisited).

        The root's mean value counts the model's estimate once and each simulation's return once:
        (v(root) + sum_a W(root, a)) / (1 + sum_a N(root, a)).
        """
        return kernels.root_statistics(self.visits, self.value_sum, self.root_estimate)
