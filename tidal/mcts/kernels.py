"""The per-simulation tree bookkeeping as compiled loops over `Tree`'s arrays (numba, cached on disk).

A simulation touches a few numbers per tree level, so numpy's per-op cost (a microsecond or more
for a handful of numbers) made a search of B trees cost one op sequence per level per simulation.
These kernels walk all B trees in one call each: `select` descends them by pUCT, `expand_and_backup`
adds the new leaves and backs their returns up, so Python pays a call, not a loop, per simulation.
They read and write the arrays in place and assume the shapes `Tree` gives them (no bounds checks).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _min_max_affine(minimum: float, maximum: float, delta: float) -> tuple[float, float]:
    """(offset, scale) of one tree's normalisation: (min, 1 / max(max - min, delta)), or (0, 1) without scale."""
    span = maximum - minimum
    if span > 0.0:
        return minimum, 1.0 / max(span, delta)
    return 0.0, 1.0


@njit(cache=True)
def _node_scores(scores: np.ndarray, prior: np.ndarray, visits: np.ndarray, value_sum: np.ndarray, offset: float,
                 scale: float, pb_c_init: float, pb_c_base: float) -> None:
    """pUCT of one node's A edges into `scores` [A]; see `Tree.puct_scores` for the formula."""
    num_actions = prior.shape[0]
    node_visits = 1.0
    for a in range(num_actions):
        node_visits += visits[a]
    exploration = (pb_c_init + math.log((node_visits + pb_c_base + 1.0) / pb_c_base)) * math.sqrt(node_visits)
    for a in range(num_actions):
        n = visits[a]
        # Qnorm = (W / N - offset) * scale, written over W and N so that W = N = 0 (unvisited) gives 0
        q_normalized = (value_sum[a] - offset * n) * scale / max(n, 1.0)
        scores[a] = q_normalized + prior[a] * exploration / (1.0 + n)


@njit(cache=True)
def puct_scores(prior: np.ndarray, visits: np.ndarray, value_sum: np.ndarray, root_illegal: np.ndarray,
                minimum: np.ndarray, maximum: np.ndarray, delta: float, trees: np.ndarray, nodes: np.ndarray,
                pb_c_init: float, pb_c_base: float, at_root: bool) -> np.ndarray:
    """Scores [k, A] of node nodes[i] of tree trees[i]; with `at_root`, illegal root actions score -inf."""
    scores = np.empty((trees.shape[0], prior.shape[2]))
    for i in range(trees.shape[0]):
        b, node = trees[i], nodes[i]
        offset, scale = _min_max_affine(minimum[b], maximum[b], delta)
        _node_scores(scores[i], prior[b, node], visits[b, node], value_sum[b, node], offset, scale, pb_c_init,
                     pb_c_base)
        if at_root:
            for a in range(prior.shape[2]):
                if root_illegal[b, a]:
                    scores[i, a] = -np.inf
    return scores


@njit(cache=True)
def select(prior: np.ndarray, visits: np.ndarray, value_sum: np.ndarray, children: np.ndarray,
           game_over: np.ndarray, root_illegal: np.ndarray, minimum: np.ndarray, maximum: np.ndarray, delta: float,
           pb_c_init: float, pb_c_base: float, path_nodes: np.ndarray, path_actions: np.ndarray,
           path_length: np.ndarray, leaf_rows: np.ndarray, leaf_actions: np.ndarray) -> None:
    """Descend each tree from its root by pUCT (ties: lowest action) to its first unexpanded edge, or to the
    edge into a node marked `game_over` [B, S + 1], which is never expanded.

    Writes tree b's path into path_nodes[b, :d], path_actions[b, :d] and d into path_length[b], and
    its leaf edge as (latent row b * capacity + parent node, action) into leaf_rows[b], leaf_actions[b].
    """
    batch_size, capacity, num_actions = prior.shape
    scores = np.empty(num_actions)
    for b in range(batch_size):
        offset, scale = _min_max_affine(minimum[b], maximum[b], delta)
        node, depth = 0, 0
        while True:
            _node_scores(scores, prior[b, node], visits[b, node], value_sum[b, node], offset, scale, pb_c_init,
                         pb_c_base)
            best_action, best_score = -1, -np.inf
            for a in range(num_actions):
                if depth == 0 and root_illegal[b, a]:
                    continue
                if best_action < 0 or scores[a] > best_score:  # strict: a tie keeps the lower action
                    best_action, best_score = a, scores[a]
            path_nodes[b, depth] = node
            path_actions[b, depth] = best_action
            depth += 1
            child = children[b, node, best_action]
            if child < 0 or game_over[b, child]:
                break
            node = child
        path_length[b] = depth
        leaf_rows[b] = b * capacity + node
        leaf_actions[b] = best_action


@njit(cache=True)
def expand_and_backup(prior: np.ndarray, reward: np.ndarray, visits: np.ndarray, value_sum: np.ndarray,
                      children: np.ndarray, node_value: np.ndarray, game_over: np.ndarray, minimum: np.ndarray,
                      maximum: np.ndarray, path_nodes: np.ndarray, path_actions: np.ndarray, path_length: np.ndarray,
                      new_node: int, leaf_reward: np.ndarray, leaf_value: np.ndarray, leaf_logits: np.ndarray,
                      leaf_game_over: np.ndarray, discount: float) -> None:
    """Add node `new_node` behind each tree's selected edge, then back its value up the path.

    The new node gets the prior softmax(leaf_logits[b]), its value leaf_value[b] in node_value and its
    flag leaf_game_over[b] in game_over, and its edge the reward leaf_reward[b]. Where the selected edge
    already leads to a node (one marked game over) nothing is added and the leaf's value is that node's
    stored one. Then, from G = the leaf's value up, G = R(edge) + discount * G, N += 1, W += G on every
    edge of the path, and each updated Q = W / N widens the tree's min-max bounds.
    """
    num_actions = prior.shape[2]
    for b in range(prior.shape[0]):
        depth = path_length[b]
        parent, action = path_nodes[b, depth - 1], path_actions[b, depth - 1]
        child = children[b, parent, action]
        if child >= 0:  # a game-over node: a leaf for good, its value backed up again
            g = node_value[b, child]
        else:
            children[b, parent, action] = new_node
            reward[b, parent, action] = leaf_reward[b]
            top = -np.inf
            for a in range(num_actions):
                top = max(top, float(leaf_logits[b, a]))
            total = 0.0
            for a in range(num_actions):
                p = math.exp(float(leaf_logits[b, a]) - top)
                prior[b, new_node, a] = p
                total += p
            for a in range(num_actions):
                prior[b, new_node, a] /= total
            g = float(leaf_value[b])
            node_value[b, new_node] = g
            game_over[b, new_node] = leaf_game_over[b]
        for i in range(depth - 1, -1, -1):
            node, a = path_nodes[b, i], path_actions[b, i]
            g = reward[b, node, a] + discount * g
            visits[b, node, a] += 1.0
            value_sum[b, node, a] += g
            q = value_sum[b, node, a] / visits[b, node, a]
            minimum[b] = min(minimum[b], q)
            maximum[b] = max(maximum[b], q)


@njit(cache=True)
def root_statistics(visits: np.ndarray, value_sum: np.ndarray, root_estimate: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(root visits [B, A], root mean value [B], root Q [B, A] with 0 where unvisited); see `Tree`."""
    batch_size, _, num_actions = visits.shape
    root_visits = np.empty((batch_size, num_actions))
    root_value = np.empty(batch_size)
    q = np.zeros((batch_size, num_actions))
    for b in range(batch_size):
        total_visits, total_value = 1.0, root_estimate[b]
        for a in range(num_actions):
            n, w = visits[b, 0, a], value_sum[b, 0, a]
            root_visits[b, a] = n
            total_visits += n
            total_value += w
            if n > 0:
                q[b, a] = w / n
        root_value[b] = total_value / total_visits
    return root_visits, root_value, q


@njit(cache=True)
def mix_noise(prior: np.ndarray, gamma: np.ndarray, illegal: np.ndarray, fraction: float) -> None:
    """prior [B, A] = (1 - fraction) prior + fraction noise in place, noise = the legal Gamma draws normalised.

    Normalised Gamma(alpha) draws are Dirichlet(alpha); a row whose legal draws all underflow gets uniform noise.
    """
    batch_size, num_actions = prior.shape
    for b in range(batch_size):
        total, num_legal = 0.0, 0
        for a in range(num_actions):
            if not illegal[b, a]:
                total += gamma[b, a]
                num_legal += 1
        for a in range(num_actions):
            if illegal[b, a]:
                noise = 0.0
            elif total > 0.0:
                noise = gamma[b, a] / total
            else:
                noise = 1.0 / num_legal
            prior[b, a] = (1.0 - fraction) * prior[b, a] + fraction * noise
