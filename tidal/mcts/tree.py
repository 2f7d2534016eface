"""B search trees in preallocated arrays, and the three steps of a simulation on all of them at once.

A search of S simulations adds exactly one node to every tree per simulation, so node ids run 0..S
(0 is the root) and simulation k creates node k in all B trees. Statistics sit on edges (node, action),
as in the paper: N(s, a) visits, W(s, a) the sum of the discounted returns backed up through the edge
(so Q(s, a) = W / N = R(s, a) + discount * mean value below), R(s, a) the model's reward for the
transition, P(s, a) the prior, and the child's node id (-1 = not expanded yet).

The statistics are float64 numpy arrays on the CPU: a simulation is a few dozen ops on arrays of B x A
numbers, where numpy's cost per op is several times below torch's. Each array also has a flat view,
so an edge is one integer, ((tree * num_nodes) + node) * A + action, and a gather is one index op.
Only the latents are torch tensors, on the device of the model that made them.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from tidal.mcts.min_max import MinMaxStats

Path = list[tuple[np.ndarray, np.ndarray]]  # per depth from the root: (tree ids [k], their edge there [k])


class Tree:
    """B trees of `num_simulations + 1` nodes over A actions, each holding its root after construction.

    `root_legal` [B, A] (None = all legal) applies at the root only: illegal root actions are never
    selected. Inner nodes are latent states of the model, where every action is legal.
    """

    def __init__(self, root_latent: torch.Tensor, root_prior: np.ndarray, root_estimate: np.ndarray,
                 num_simulations: int, root_legal: Optional[np.ndarray] = None) -> None:
        batch_size, num_actions = root_prior.shape
        self.batch_size, self.num_actions, self.capacity = batch_size, num_actions, num_simulations + 1
        shape = (batch_size, self.capacity, num_actions)
        self.latents = root_latent.new_empty((batch_size, self.capacity, *root_latent.shape[1:]))
        self.latents[:, 0] = root_latent
        self.prior = np.zeros(shape)
        self.prior[:, 0] = root_prior
        self.reward = np.zeros(shape)
        self.visits = np.zeros(shape)  # counts, kept as floats: every use of them is arithmetic
        self.value_sum = np.zeros(shape)
        self.children = np.full(shape, -1, dtype=np.int64)
        self.root_estimate = np.asarray(root_estimate, dtype=np.float64)  # the model's value of each root
        self.root_illegal = None if root_legal is None else ~np.asarray(root_legal, dtype=bool)
        self.min_max = MinMaxStats(batch_size)
        self.num_nodes = 1
        # views: rows [B * capacity, A] for per-node gathers, edges [B * capacity * A] for per-edge ones
        self._latent_rows = self.latents.view(batch_size * self.capacity, *root_latent.shape[1:])
        self._prior_rows = self.prior.reshape(-1, num_actions)
        self._visit_rows = self.visits.reshape(-1, num_actions)
        self._value_sum_rows = self.value_sum.reshape(-1, num_actions)
        self._visit_edges = self.visits.reshape(-1)
        self._value_sum_edges = self.value_sum.reshape(-1)
        self._reward_edges = self.reward.reshape(-1)
        self._child_edges = self.children.reshape(-1)
        self._all_trees = np.arange(batch_size)

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
        offset, scale = self.min_max.affine()
        return self._scores(trees, trees * self.capacity + nodes, offset, scale, pb_c_init, pb_c_base, at_root)

    def _scores(self, trees: np.ndarray, rows: np.ndarray, offset: np.ndarray, scale: np.ndarray, pb_c_init: float,
                pb_c_base: float, at_root: bool) -> np.ndarray:
        """`puct_scores` at node rows [k], given the min-max affine map of every tree."""
        visits = self._visit_rows.take(rows, axis=0)
        node_visits = 1.0 + visits.sum(axis=1, keepdims=True)
        exploration = (pb_c_init + np.log((node_visits + pb_c_base + 1.0) / pb_c_base)) * np.sqrt(node_visits)
        # Qnorm = (W / N - offset) * scale, written over W and N so that W = N = 0 (unvisited) gives 0
        q_normalized = ((self._value_sum_rows.take(rows, axis=0) - offset.take(trees)[:, None] * visits)
                        * scale.take(trees)[:, None] / np.maximum(visits, 1.0))
        scores = q_normalized + self._prior_rows.take(rows, axis=0) * exploration / (1.0 + visits)
        if at_root and self.root_illegal is not None:
            scores[self.root_illegal[trees]] = -np.inf
        return scores

    def select(self, pb_c_init: float, pb_c_base: float) -> tuple[Path, np.ndarray]:
        """Descend every tree by pUCT (ties: lowest action) to its first unexpanded edge.

        Returns the path and each tree's leaf edge [B]. A tree leaves the loop at its leaf, so each
        level is a few array ops over the trees still descending.
        """
        offset, scale = self.min_max.affine()  # the bounds change only in `backup`
        trees, rows = self._all_trees, self._all_trees * self.capacity  # every tree at its root
        leaf_edges = np.empty(self.batch_size, dtype=np.int64)
        path: Path = []
        while trees.size:
            scores = self._scores(trees, rows, offset, scale, pb_c_init, pb_c_base, at_root=not path)
            edges = rows * self.num_actions + scores.argmax(axis=1)
            path.append((trees, edges))
            children = self._child_edges[edges]
            expanded = children >= 0
            leaf_edges[trees[~expanded]] = edges[~expanded]
            trees = trees[expanded]
            rows = trees * self.capacity + children[expanded]
        return path, leaf_edges

    def leaf_inputs(self, leaf_edges: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's input for each leaf edge [B]: (parent latent [B, ...], action [B] long)."""
        parent_rows = torch.from_numpy(leaf_edges // self.num_actions).to(self.latents.device)
        actions = torch.from_numpy(leaf_edges % self.num_actions).to(self.latents.device)
        return self._latent_rows.index_select(0, parent_rows), actions

    def expand(self, leaf_edges: np.ndarray, latent: torch.Tensor, reward: np.ndarray, prior: np.ndarray) -> None:
        """Add one node per tree behind its leaf edge [B]: its latent, the edge's reward, its priors [B, A]."""
        node = self.num_nodes
        self.latents[:, node] = latent
        self.prior[:, node] = prior
        self._reward_edges[leaf_edges] = reward
        self._child_edges[leaf_edges] = node
        self.num_nodes += 1

    def backup(self, path: Path, leaf_value: np.ndarray, discount: float) -> None:
        """From each new leaf's value [B] up its path: G = R(edge) + discount * G, then N += 1, W += G.

        Every updated Q = W / N then widens its tree's min-max bounds (all at once: only `select` reads them).
        """
        returns = np.array(leaf_value, dtype=np.float64)
        q_trees, q_values = [], []
        for trees, edges in reversed(path):
            g = self._reward_edges[edges] + discount * returns[trees]
            returns[trees] = g
            visits = self._visit_edges[edges] + 1.0
            value_sum = self._value_sum_edges[edges] + g
            self._visit_edges[edges] = visits
            self._value_sum_edges[edges] = value_sum
            q_trees.append(trees)
            q_values.append(value_sum / visits)
        self.min_max.update(np.concatenate(q_trees), np.concatenate(q_values))

    def root_statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(root visits [B, A], root mean value [B], root Q [B, A] with 0 where unvisited).

        The root's mean value counts the model's estimate once and each simulation's return once:
        (v(root) + sum_a W(root, a)) / (1 + sum_a N(root, a)).
        """
        visits, value_sum = self.visits[:, 0], self.value_sum[:, 0]
        root_value = (self.root_estimate + value_sum.sum(axis=1)) / (1.0 + visits.sum(axis=1))
        q = np.where(visits > 0, value_sum / np.maximum(visits, 1.0), 0.0)
        return visits, root_value, q
