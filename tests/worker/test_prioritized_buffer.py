from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from tidal.base.errors import CheckpointError, ConfigError
from tidal.worker.prioritized_buffer import PrioritizedReplayBuffer
from tidal.worker.replay_buffer import ReplayBuffer, ReplayBufferError
from tidal.worker.sum_tree import MinTree, SumTree


def transitions(first: int, count: int) -> dict:
    number = torch.arange(first, first + count, dtype=torch.float32)
    return {'obs': number[:, None].repeat(1, 3), 'action': number[:, None], 'reward': number}


def filled_buffer(priority: list, capacity: int | None = None, **kwargs) -> PrioritizedReplayBuffer:
    """A buffer holding one transition per given priority, set through update_priority."""
    buffer = PrioritizedReplayBuffer(capacity or len(priority), **kwargs)
    buffer.extend(transitions(0, len(priority)))
    buffer.update_priority(torch.arange(len(priority)), torch.tensor(priority))
    return buffer


def sampling_frequencies(buffer: PrioritizedReplayBuffer, draws: int, batch_size: int = 256) -> np.ndarray:
    index = torch.cat([buffer.sample(batch_size)['index'] for _ in range(draws // batch_size)])
    return np.bincount(index.numpy(), minlength=buffer.capacity) / index.numel()


# sum tree --------------------------------------------------------------------------------------


def assert_tree_consistent(tree, leaves: np.ndarray, reduce) -> None:
    nodes = tree._nodes
    for node in range(1, tree._leaf_offset):
        assert nodes[node] == reduce([nodes[2 * node], nodes[2 * node + 1]])
    assert np.isclose(tree.root, reduce(leaves))


def test_sum_and_min_tree_roots_match_leaves_after_random_updates_with_duplicates():
    rng = np.random.default_rng(0)
    capacity = 37  # not a power of two: the padding leaves must stay neutral
    sum_tree, min_tree = SumTree(capacity), MinTree(capacity)
    reference = np.zeros(capacity)
    sum_tree.rebuild(reference)
    min_tree.rebuild(reference)
    for _ in range(50):
        leaves = rng.integers(0, capacity, size=20)  # 20 draws of 37 leaves: repeats are certain
        values = rng.random(20)
        for tree in (sum_tree, min_tree):
            tree.update(leaves, values)
        for leaf, value in zip(leaves, values):  # sequential writes: the last one wins
            reference[leaf] = value
        first = int(rng.integers(0, capacity - 5))
        appended = rng.random(5)
        for tree in (sum_tree, min_tree):
            tree.update_range(first, appended)
        reference[first:first + 5] = appended
    assert np.array_equal(sum_tree.leaf_values(capacity), reference)
    assert np.array_equal(min_tree.leaf_values(capacity), reference)
    assert_tree_consistent(sum_tree, reference, np.sum)
    assert_tree_consistent(min_tree, reference, np.min)


def test_repeated_leaf_in_one_update_keeps_the_last_value():
    tree = SumTree(4)
    tree.update(np.array([3, 1, 3, 3]), np.array([5.0, 2.0, 7.0, 1.0]))
    assert tree.leaf_values(4).tolist() == [0.0, 2.0, 0.0, 1.0]
    assert tree.total == 3.0


def test_prefix_sum_finds_the_leaf_owning_each_mass():
    tree = SumTree(4)
    tree.rebuild(np.array([1.0, 2.0, 3.0, 4.0]))  # owns [0, 1), [1, 3), [3, 6), [6, 10)
    mass = np.array([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.99])
    assert tree.find_prefix_sum(mass).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_single_leaf_tree_updates_and_samples():
    tree = SumTree(1)
    tree.update_range(0, np.array([2.5]))
    assert tree.total == 2.5 and tree.find_prefix_sum(np.array([2.0])).tolist() == [0]


# prioritized buffer ----------------------------------------------------------------------------


def test_sample_has_int64_index_and_float32_weight_per_transition():
    buffer = PrioritizedReplayBuffer(8, seed=0)
    buffer.extend(transitions(0, 5))
    batch = buffer.sample(6)
    assert batch['obs'].shape == (6, 3) and batch['reward'].shape == (6, )
    assert batch['index'].dtype == torch.int64 and batch['index'].shape == (6, )
    assert batch['weight'].dtype == torch.float32 and batch['weight'].shape == (6, )
    assert torch.equal(batch['reward'], batch['index'].float())


def test_new_transitions_start_with_equal_weights_and_uniform_sampling():
    buffer = PrioritizedReplayBuffer(4, seed=0)
    buffer.extend(transitions(0, 4))
    batch = buffer.sample(8)  # stratified over 4 equal priorities: each slot exactly twice
    assert sorted(batch['index'].tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert torch.equal(batch['weight'], torch.ones(8))


def test_priorities_1_2_3_4_with_alpha_1_are_sampled_in_proportion():
    buffer = filled_buffer([1.0, 2.0, 3.0, 4.0], alpha=1.0, seed=0)
    frequencies = sampling_frequencies(buffer, draws=25600)
    assert np.allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.005)


def test_alpha_zero_samples_uniformly_whatever_the_priorities():
    buffer = filled_buffer([1.0, 10.0, 100.0, 1000.0], alpha=0.0, seed=0)
    frequencies = sampling_frequencies(buffer, draws=25600)
    assert np.allclose(frequencies, 0.25, atol=0.005)
    assert torch.equal(buffer.sample(16)['weight'], torch.ones(16))


def test_importance_weights_match_hand_computed_values():
    # 4 of 8 slots stored, p = [1, 2, 3, 4], alpha = 1: P = [.1, .2, .3, .4], N = 4, beta = 0.5.
    # w = (N P)^-beta = [.4, .8, 1.2, 1.6]^-0.5, the largest is (N P_min)^-beta = .4^-0.5, so
    # w / max w = [1, (.4 / .8)^.5, (.4 / 1.2)^.5, (.4 / 1.6)^.5] = [1, .70711, .57735, .5]
    buffer = filled_buffer([1.0, 2.0, 3.0, 4.0], capacity=8, alpha=1.0, beta=0.5, seed=0)
    batch = buffer.sample(64)
    expected = torch.tensor([1.0, 0.70711, 0.57735, 0.5])[batch['index']]
    assert torch.allclose(batch['weight'], expected, atol=1e-5)
    assert batch['index'].max() < 4  # empty slots are never drawn


def test_stratified_sampling_draws_one_index_per_mass_segment():
    # slots own mass [0, 1), [1, 4), [4, 7): 7 segments of width 1 hit them 1, 3 and 3 times
    buffer = PrioritizedReplayBuffer(4, alpha=1.0, beta=1.0, seed=0)
    buffer.extend(transitions(0, 2))
    buffer.update_priority(torch.tensor([0, 1]), torch.tensor([1.0, 3.0]))
    buffer.extend(transitions(2, 1))  # a new transition gets the largest priority so far, 3
    batch = buffer.sample(7)
    assert batch['index'].tolist() == [0, 1, 1, 1, 2, 2, 2]
    assert torch.allclose(batch['weight'], torch.tensor([1.0] + [1 / 3] * 6), atol=1e-5)


def test_update_priority_with_repeated_index_keeps_the_last_priority():
    buffer = filled_buffer([1.0, 1.0], alpha=1.0, beta=1.0, eps=1e-6, seed=0)
    buffer.update_priority(torch.tensor([0, 1, 0]), torch.tensor([9.0, 2.0, 4.0]))
    batch = buffer.sample(6)  # mass [0, 4) for slot 0, [4, 6) for slot 1
    assert batch['index'].tolist() == [0, 0, 0, 0, 1, 1]
    assert torch.allclose(batch['weight'], torch.tensor([0.5] * 4 + [1.0] * 2), atol=1e-5)


def test_update_priority_uses_absolute_value_plus_eps_to_the_alpha():
    buffer = filled_buffer([-3.0, 0.0], alpha=0.5, beta=1.0, eps=1.0, seed=0)
    # stored (|p| + eps)^alpha = [2, 1]; with beta = 1 the weights are p_min / p
    batch = buffer.sample(30)
    assert torch.allclose(batch['weight'], torch.where(batch['index'] == 0, 0.5, 1.0))


def test_beta_anneals_linearly_and_reaches_one_after_anneal_step_samples():
    buffer = filled_buffer([1.0, 4.0], alpha=1.0, beta=0.4, anneal_step=10, eps=1e-9, seed=0)
    assert buffer.beta == pytest.approx(0.4)
    for _ in range(5):
        buffer.sample(4)
    assert buffer.beta == pytest.approx(0.7)
    for _ in range(5):
        buffer.sample(4)
    assert buffer.beta == 1.0
    batch = buffer.sample(10)  # beta = 1: w = p_min / p
    assert torch.allclose(batch['weight'], torch.where(batch['index'] == 0, 1.0, 0.25))
    buffer.sample(4)
    assert buffer.beta == 1.0


def test_beta_after_3_of_4_anneal_samples_sets_the_importance_weights():
    # beta = 0.4 + (1 - 0.4) * 3 / 4 = 0.85; p = [1, 4] with alpha = 1: w = (p_min / p)^beta = [1, 0.25^0.85]
    buffer = filled_buffer([1.0, 4.0], alpha=1.0, beta=0.4, anneal_step=4, eps=1e-9, seed=0)
    for _ in range(3):
        buffer.sample(4)
    assert buffer.beta == pytest.approx(0.85)
    batch = buffer.sample(10)
    assert torch.allclose(batch['weight'], torch.where(batch['index'] == 0, 1.0, 0.30779), atol=1e-5)


def test_fixed_beta_when_anneal_step_is_zero():
    buffer = filled_buffer([1.0, 2.0], beta=0.4, seed=0)
    for _ in range(20):
        buffer.sample(4)
    assert buffer.beta == 0.4


def test_wrapping_and_oversized_extends_keep_one_priority_per_stored_slot():
    buffer = PrioritizedReplayBuffer(5, alpha=1.0, seed=0)
    buffer.extend(transitions(0, 3))
    buffer.update_priority(torch.tensor([0, 1, 2]), torch.tensor([2.0, 2.0, 2.0]))
    buffer.extend(transitions(3, 4))  # wraps: slots 3, 4, 0, 1
    buffer.extend(transitions(7, 12))  # more than capacity
    assert buffer._sum_tree.total == pytest.approx(5 * (2.0 + 1e-6))
    assert buffer._min_tree.min == pytest.approx(2.0 + 1e-6)
    assert_tree_consistent(buffer._sum_tree, buffer._sum_tree.leaf_values(5), np.sum)


def test_update_priority_rejects_out_of_range_index_and_nan():
    buffer = filled_buffer([1.0, 2.0], capacity=4)
    with pytest.raises(ReplayBufferError, match=r'index out of range \[0, 2\)'):
        buffer.update_priority(torch.tensor([2]), torch.tensor([1.0]))
    with pytest.raises(ReplayBufferError, match='NaN or infinite'):
        buffer.update_priority(torch.tensor([0]), torch.tensor([float('nan')]))
    with pytest.raises(ReplayBufferError, match='2 indices but 1 priorities'):
        buffer.update_priority(torch.tensor([0, 1]), torch.tensor([1.0]))


def test_invalid_hyperparameters_raise_config_errors():
    with pytest.raises(ConfigError, match='alpha'):
        PrioritizedReplayBuffer(4, alpha=-1.0)
    with pytest.raises(ConfigError, match='beta'):
        PrioritizedReplayBuffer(4, beta=1.5)
    with pytest.raises(ConfigError, match='eps'):
        PrioritizedReplayBuffer(4, eps=0.0)


def test_weight_is_a_reserved_column_name():
    with pytest.raises(ReplayBufferError, match="'weight' is reserved"):
        PrioritizedReplayBuffer(4).extend({'weight': torch.ones(1)})


def test_state_dict_round_trip_reproduces_priorities_beta_and_the_next_sample():
    buffer = PrioritizedReplayBuffer(16, alpha=0.7, beta=0.4, anneal_step=100, seed=2)
    buffer.extend(transitions(0, 20))
    batch = buffer.sample(8)
    buffer.update_priority(batch['index'], torch.rand(8) * 5)
    buffer.sample(8)
    file = io.BytesIO()
    torch.save(buffer.state_dict(), file)
    file.seek(0)
    restored = PrioritizedReplayBuffer(16, alpha=0.7, beta=0.4, anneal_step=100, seed=5)
    restored.load_state_dict(torch.load(file))

    assert restored.beta == buffer.beta
    expected, got = buffer.sample(32), restored.sample(32)
    for key in ('index', 'weight', 'obs', 'reward'):
        assert torch.equal(expected[key], got[key])
    for each in (buffer, restored):  # the largest priority carries over to new transitions
        each.extend(transitions(20, 1))
    assert np.array_equal(buffer._sum_tree.leaf_values(16), restored._sum_tree.leaf_values(16))
    assert buffer._min_tree.min == restored._min_tree.min


def test_loading_a_uniform_buffer_state_into_a_prioritized_buffer_raises():
    uniform = ReplayBuffer(4)
    uniform.extend(transitions(0, 2))
    with pytest.raises(CheckpointError, match='uniform ReplayBuffer'):
        PrioritizedReplayBuffer(4).load_state_dict(uniform.state_dict())


def test_loading_a_state_saved_with_another_alpha_raises():
    buffer = filled_buffer([1.0, 2.0], alpha=0.6)
    with pytest.raises(CheckpointError, match='alpha=0.6'):
        PrioritizedReplayBuffer(2, alpha=0.5).load_state_dict(buffer.state_dict())
