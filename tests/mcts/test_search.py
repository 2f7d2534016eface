"""Batched MuZero search: pUCT, backup, min-max, root mask and noise, batch independence, predicted game overs,
visit policy."""
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from tidal.mcts import (MinMaxStats, SearchConfig, SearchError, Tree, expand_root, search, simulate,
                        visit_policy)

C1, C2 = 1.25, 19652.0


def empty_tree(batch_size: int, num_actions: int, num_simulations: int = 4, root_legal=None) -> Tree:
    prior = np.full((batch_size, num_actions), 1.0 / num_actions)
    return Tree(torch.zeros(batch_size, 1), prior, np.zeros(batch_size), num_simulations, root_legal)


def reward_for_action(rewarded: int, num_actions: int):
    """A model whose only signal is reward 1 for `rewarded`: uniform logits, value 0, latent unchanged."""
    def recurrent_fn(latent, action):
        n = action.shape[0]
        return latent, (action == rewarded).float(), torch.zeros(n, num_actions), torch.zeros(n), None
    return recurrent_fn


def test_puct_scores_of_a_hand_built_state_match_the_formula():
    tree = empty_tree(batch_size=2, num_actions=3)
    # tree 0 at its root: N(s, .) = 2, 1, 0, W = 3, 0.5, 0 -> Q = 1.5, 0.5; bounds [0.5, 2.5]
    tree.prior[0, 0] = [0.5, 0.3, 0.2]
    tree.visits[0, 0] = [2.0, 1.0, 0.0]
    tree.value_sum[0, 0] = [3.0, 0.5, 0.0]
    # tree 1 at node 1: one visit with Q = -0.25, the only value seen, so no scale: Q is used as is
    tree.prior[1, 1] = [0.2, 0.2, 0.6]
    tree.visits[1, 1] = [1.0, 0.0, 0.0]
    tree.value_sum[1, 1] = [-0.25, 0.0, 0.0]
    tree.min_max.update(np.array([0, 0, 1]), np.array([0.5, 2.5, -0.25]))
    scores = tree.puct_scores(np.array([0, 1]), np.array([0, 1]), C1, C2)
    # tree 0: N(s) = 1 (its own evaluation) + 3 edge visits = 4; Qnorm = (1.5 - 0.5) / 2 = 0.5,
    # (0.5 - 0.5) / 2 = 0, unvisited 0
    c = (C1 + math.log((4 + C2 + 1) / C2)) * math.sqrt(4)
    assert scores[0].tolist() == pytest.approx([0.5 + 0.5 * c / 3, 0.0 + 0.3 * c / 2, 0.0 + 0.2 * c / 1])
    # tree 1: N(s) = 1 + 1 = 2
    c = (C1 + math.log((2 + C2 + 1) / C2)) * math.sqrt(2)
    assert scores[1].tolist() == pytest.approx([-0.25 + 0.2 * c / 2, 0.2 * c, 0.6 * c])


def test_illegal_root_actions_score_minus_infinity_at_the_root_only():
    tree = empty_tree(batch_size=1, num_actions=3, root_legal=np.array([[False, True, True]]))
    at_root = tree.puct_scores(np.array([0]), np.array([0]), C1, C2, at_root=True)
    # no edge visits yet: N(s) = 1 (the root's own evaluation), so each legal action scores its prior term
    prior_term = (1.0 / 3.0) * (C1 + math.log((1 + C2 + 1) / C2))
    assert at_root[0, 0] == -math.inf and at_root[0, 1:].tolist() == pytest.approx([prior_term, prior_term])
    # node 1 is not the root: the mask does not apply there (its priors are still all 0)
    assert tree.puct_scores(np.array([0]), np.array([1]), C1, C2).tolist() == [[0.0, 0.0, 0.0]]


def test_min_max_normalizes_each_tree_by_its_own_bounds_and_leaves_trees_without_scale_alone():
    stats = MinMaxStats(3)
    stats.update(np.array([0, 0, 1]), np.array([1.0, 5.0, 2.0]))  # tree 0: [1, 5]; tree 1: only 2; tree 2: nothing
    q = np.array([[1.0, 3.0, 5.0], [2.0, -1.0, 7.0], [0.5, 4.0, -3.0]])
    normalized = stats.normalize(np.array([0, 1, 2]), q)
    # tree 0: (q - 1) / 4; trees 1 and 2: max <= min, so q as is
    assert normalized.tolist() == [[0.0, 0.5, 1.0], [2.0, -1.0, 7.0], [0.5, 4.0, -3.0]]


def test_the_min_max_range_floor_keeps_nearly_equal_q_values_from_overriding_the_priors():
    def model(latent, action):  # action 1 pays 1e-5 more than action 0, as a fresh model's rounding noise would
        n = action.shape[0]
        return latent, 1e-5 * action.float(), torch.zeros(n, 2), torch.zeros(n), None

    args = (torch.zeros(1, 1), torch.tensor([[math.log(0.53), math.log(0.47)]]), torch.zeros(1), model)
    floored = search(*args, SearchConfig(num_simulations=50), add_noise=False)  # min_max_delta = 0.01
    assert 22 <= floored.visit_counts[0, 0].item() <= 32  # the priors' 53 / 47, roughly
    # without the floor, the 1e-5 gap is stretched to the whole [0, 1] and decides the search
    stretched = search(*args, SearchConfig(num_simulations=50, min_max_delta=0.0), add_noise=False)
    assert stretched.visit_counts[0].tolist() == [4.0, 46.0]


def test_min_max_floors_the_range_at_delta_once_a_tree_has_a_scale():
    stats = MinMaxStats(2, delta=0.01)
    stats.update(np.array([0, 0, 1]), np.array([1.0, 1.002, 3.0]))  # tree 0 spans 0.002 < delta; tree 1 one value
    normalized = stats.normalize(np.array([0, 1]), np.array([[1.0, 1.002], [3.0, 5.0]]))
    assert normalized[0].tolist() == pytest.approx([0.0, 0.2]) and normalized[1].tolist() == [3.0, 5.0]


def test_a_negative_min_max_delta_is_refused():
    with pytest.raises(SearchError, match='min_max_delta must be >= 0, got -0.1'):
        SearchConfig(min_max_delta=-0.1)


def chain_model(latent, action):
    """One action; the latent is the node's depth d, the edge into depth d pays d, and V(depth d) = 4 d."""
    depth = latent[:, 0] + 1
    return latent + 1, depth, torch.zeros(latent.shape[0], 1), 4 * depth, None


def test_backup_along_a_one_action_chain_gives_hand_computed_sums():
    config = SearchConfig(num_simulations=3, discount=0.5)
    tree = expand_root(torch.zeros(1, 1), torch.zeros(1, 1), torch.tensor([2.0]), config, add_noise=False)
    for _ in range(3):
        simulate(tree, chain_model, config)
    # each simulation adds the next node of the chain: 0 -> 1 -> 2 -> 3, edge rewards 1, 2, 3
    # sim 1: G(0->1) = 1 + 0.5 * V1 (4) = 3
    # sim 2: G(1->2) = 2 + 0.5 * V2 (8) = 6        G(0->1) = 1 + 0.5 * 6 = 4
    # sim 3: G(2->3) = 3 + 0.5 * V3 (12) = 9       G(1->2) = 2 + 0.5 * 9 = 6.5     G(0->1) = 1 + 0.5 * 6.5 = 4.25
    assert tree.children[0, :3, 0].tolist() == [1, 2, 3]
    assert tree.reward[0, :3, 0].tolist() == [1.0, 2.0, 3.0]
    assert tree.visits[0, :3, 0].tolist() == [3.0, 2.0, 1.0]
    assert tree.value_sum[0, :3, 0].tolist() == [3 + 4 + 4.25, 6 + 6.5, 9.0]
    # Q values seen: 3; 6, 7/2; 9, 12.5/2, 11.25/3
    assert (tree.min_max.minimum[0], tree.min_max.maximum[0]) == (3.0, 9.0)
    result = search(torch.zeros(1, 1), torch.zeros(1, 1), torch.tensor([2.0]), chain_model, config, add_noise=False)
    assert result.visit_counts.tolist() == [[3.0]]
    assert result.q_values.tolist() == [[11.25 / 3]]
    # the root's estimate counted once with the three returns: (2 + 3 + 4 + 4.25) / 4
    assert result.root_value.tolist() == [13.25 / 4]
    assert result.root_value.dtype == result.q_values.dtype == result.visit_counts.dtype == torch.float32


def test_illegal_root_actions_are_never_visited_even_with_noise():
    legal = torch.tensor([[True, True, True, False], [False, True, False, True], [True, False, False, False]])
    logits = torch.tensor([[0.0, 0.0, 0.0, 9.0]]).expand(3, 4)  # the model prefers action 3 ...
    config = SearchConfig(num_simulations=30)
    result = search(torch.zeros(3, 1), logits, torch.zeros(3), reward_for_action(3, 4), config,  # ... and pays for it
                    legal_mask=legal, generator=torch.Generator().manual_seed(0))
    assert (result.visit_counts[~legal] == 0).all()
    assert result.visit_counts.sum(dim=1).tolist() == [30.0, 30.0, 30.0]
    assert result.visit_counts[2].tolist() == [30.0, 0.0, 0.0, 0.0]


def test_noise_is_only_at_the_root_and_reproducible_with_a_seeded_generator():
    config = SearchConfig(num_simulations=10)
    legal = torch.tensor([[True, True, False, True]])
    args = (torch.zeros(1, 1), torch.zeros(1, 4), torch.zeros(1))
    tree = expand_root(*args, config, legal, generator=torch.Generator().manual_seed(0))
    # 0.75 * 1/3 + 0.25 * noise on the legal actions, 0 on the illegal one, summing to 1
    assert tree.prior[0, 0, 2] == 0.0 and tree.prior[0, 0].sum() == pytest.approx(1.0)
    assert not np.allclose(tree.prior[0, 0, [0, 1, 3]], 1 / 3) and (tree.prior[0, 0, [0, 1, 3]] >= 0.25).all()
    for _ in range(config.num_simulations):
        simulate(tree, reward_for_action(1, 4), config)
    assert (tree.prior[0, 1:] == 0.25).all()  # inner nodes: softmax of the uniform logits, no noise
    again = expand_root(*args, config, legal, generator=torch.Generator().manual_seed(0))
    assert np.array_equal(again.prior[0, 0], tree.prior[0, 0])  # same seed, same noise
    model = reward_for_action(-1, 4)  # nothing pays: the visits follow the (noisy) root prior
    visits = [search(*args, model, config, legal, generator=torch.Generator().manual_seed(seed)).visit_counts
              for seed in (0, 0, 1, 2, 3)]
    assert torch.equal(visits[0], visits[1])
    assert any(not torch.equal(visits[0], other) for other in visits[2:])


def test_a_rewarding_action_gets_most_visits_in_every_tree_of_a_batch():
    config = SearchConfig(num_simulations=50)
    result = search(torch.zeros(8, 1), torch.zeros(8, 4), torch.zeros(8), reward_for_action(1, 4), config,
                    generator=torch.Generator().manual_seed(0))
    assert (result.visit_counts.argmax(dim=1) == 1).all()
    assert (result.visit_counts[:, 1] > 25).all()
    assert result.visit_counts.sum(dim=1).tolist() == [50.0] * 8


def varied_model(latent, action):
    """Elementwise only, so row i's outputs are bitwise the same whatever the batch around it."""
    scale = torch.tensor([[0.5, -1.0, 2.0, 0.25]])
    next_latent = torch.tanh(latent * 1.5 + action[:, None].float() * 0.3)
    logits = next_latent[:, :1] * scale + next_latent[:, 1:2]
    return next_latent, torch.sin(3.0 * latent[:, 0] + action.float()), logits, next_latent[:, 1], None


def test_each_tree_of_a_batch_is_searched_as_if_alone():
    g = torch.Generator().manual_seed(1)
    latent, logits, value = torch.randn(5, 2, generator=g), torch.randn(5, 4, generator=g), torch.randn(5, generator=g)
    legal = torch.rand(5, 4, generator=g) > 0.3
    legal[:, 2] = True
    config = SearchConfig(num_simulations=25)
    together = search(latent, logits, value, varied_model, config, legal, add_noise=False)
    for i in range(5):
        alone = search(latent[i:i + 1], logits[i:i + 1], value[i:i + 1], varied_model, config, legal[i:i + 1],
                       add_noise=False)
        assert torch.equal(alone.visit_counts[0], together.visit_counts[i])
        assert_close(alone.root_value[0], together.root_value[i])
        assert_close(alone.q_values[0], together.q_values[i])
    assert len({tuple(row) for row in together.visit_counts.tolist()}) > 1  # the trees did differ


def game_over_after_action_1_in_tree_0(latent, action):
    """Latent (depth, tree 0 flag); action 1 pays 1; V = 2 everywhere; in tree 0 the root's action 1 ends the game."""
    n = action.shape[0]
    over = (latent[:, 0] == 0) & (latent[:, 1] == 1) & (action == 1)
    next_latent = latent + torch.tensor([1.0, 0.0])
    return next_latent, action.float(), torch.zeros(n, 2), torch.full((n, ), 2.0), torch.where(over, 5.0, -5.0)


@pytest.mark.parametrize('stop', [True, False])
def test_a_node_predicted_game_over_is_never_expanded_and_backs_up_its_own_value(stop):
    config = SearchConfig(num_simulations=12, discount=0.5, stop_at_predicted_game_over=stop)
    roots = torch.tensor([[0.0, 1.0], [0.0, 0.0]])  # tree 0 has the game over, tree 1 not
    tree = expand_root(roots, torch.zeros(2, 2), torch.zeros(2), config, add_noise=False)
    for _ in range(config.num_simulations):
        simulate(tree, game_over_after_action_1_in_tree_0, config)
    over = tree.children[0, 0, 1]
    assert over > 0 and tree.visits[0, 0, 1] > 2
    assert (tree.children[1, tree.children[1, 0, 1]] >= 0).any()  # tree 1 goes on below its action 1
    if stop:
        assert tree.children[0, over].tolist() == [-1, -1]
        # every visit backs up reward 1 + 0.5 * V 2 of the game-over node, which stays a leaf
        assert tree.value_sum[0, 0, 1] == 2.0 * tree.visits[0, 0, 1]
    else:
        assert (tree.children[0, over] >= 0).any()


def test_stopping_at_game_over_needs_a_model_that_predicts_it():
    config = SearchConfig(num_simulations=2, stop_at_predicted_game_over=True)
    with pytest.raises(SearchError, match='stop_at_predicted_game_over needs a recurrent_fn that predicts game '
                                          'over'):
        search(torch.zeros(1, 1), torch.zeros(1, 2), torch.zeros(1), reward_for_action(0, 2), config)


def test_simulating_past_the_trees_capacity_is_refused():
    config = SearchConfig(num_simulations=1)
    tree = expand_root(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), config, add_noise=False)
    simulate(tree, chain_model, config)
    with pytest.raises(IndexError, match='the trees are full: 2 nodes, so 1 simulations'):
        simulate(tree, chain_model, config)


def test_visit_policy_sharpens_with_lower_temperature_and_breaks_ties_to_the_lowest_index():
    counts = torch.tensor([[1.0, 3.0, 0.0, 4.0], [2.0, 2.0, 0.0, 0.0]])
    assert_close(visit_policy(counts, 1.0), torch.tensor([[1 / 8, 3 / 8, 0.0, 4 / 8], [0.5, 0.5, 0.0, 0.0]]))
    # N^2: 1, 9, 0, 16 (sum 26) and 4, 4, 0, 0
    assert_close(visit_policy(counts, 0.5), torch.tensor([[1 / 26, 9 / 26, 0.0, 16 / 26], [0.5, 0.5, 0.0, 0.0]]))
    assert visit_policy(counts, 0.0).tolist() == [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]]


def test_a_root_without_legal_actions_is_refused_by_its_row():
    legal = torch.tensor([[True, False], [False, False]])
    with pytest.raises(SearchError, match='legal_mask row 1 has no legal action'):
        search(torch.zeros(2, 1), torch.zeros(2, 2), torch.zeros(2), reward_for_action(0, 2), SearchConfig(), legal)
