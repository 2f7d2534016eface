from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from tidal.base.errors import CheckpointError, ConfigError
from tidal.worker.prioritized_trajectory_buffer import PrioritizedTrajectoryBuffer
from tidal.worker.replay_buffer import ReplayBufferError
from tidal.worker.trajectory_buffer import TrajectoryBuffer


def rows(first: int, steps: int, num_envs: int = 2) -> dict:
    """`steps` step-major rows of `num_envs` envs from position `first` on; reward 100 * env + position."""
    position = torch.arange(first, first + steps).repeat_interleave(num_envs)
    env = torch.arange(num_envs).repeat(steps)
    no_end = torch.zeros(steps * num_envs, dtype=torch.bool)
    return {'reward': (100 * env + position).float(), 'terminated': no_end, 'truncated': no_end.clone()}


def buffer_with(priority: list[list[float]], capacity: int | None = None, **kwargs) -> PrioritizedTrajectoryBuffer:
    """One env per row of `priority`, one step per value, each set through update_priority."""
    num_envs, steps = len(priority), len(priority[0])
    kwargs = {'alpha': 1.0, 'beta': 1.0, 'seed': 0, **kwargs}
    buffer = PrioritizedTrajectoryBuffer(num_envs, capacity or steps, **kwargs)
    buffer.extend(rows(0, steps, num_envs))
    env = torch.arange(num_envs).repeat_interleave(steps)
    buffer.update_priority(env, torch.arange(steps).repeat(num_envs), torch.tensor(priority).reshape(-1))
    return buffer


def start_frequencies(buffer: PrioritizedTrajectoryBuffer, draws: int, length: int = 1) -> np.ndarray:
    """How often each (env, position) was drawn as a start, [num_envs, positions added]."""
    samples = [buffer.sample_weighted(256, length) for _ in range(draws // 256)]
    env = torch.cat([env for env, _, _ in samples])
    position = torch.cat([position for _, position, _ in samples])
    steps = int(buffer.current_position().max())
    pair = (env * steps + position).numpy()
    return np.bincount(pair, minlength=buffer.num_envs * steps).reshape(buffer.num_envs, steps) / pair.size


def test_sample_weighted_returns_long_env_ids_and_positions_and_float32_weights():
    buffer = PrioritizedTrajectoryBuffer(2, 4, alpha=0.6, beta=0.4, seed=0)
    buffer.extend(rows(0, 3))
    env, position, weight = buffer.sample_weighted(5)
    assert env.dtype == position.dtype == torch.int64 and weight.dtype == torch.float32
    assert env.shape == position.shape == weight.shape == (5, )
    reward = buffer.get(env, position)['reward']  # every drawn pair is stored
    assert torch.equal(reward, (100 * env + position).float())


def test_one_start_with_priority_9_among_ones_is_drawn_in_proportion_with_alpha_1():
    priority = [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 9.0, 1.0]]  # total 16
    frequencies = start_frequencies(buffer_with(priority), draws=25600)
    expected = np.array(priority) / 16
    assert np.allclose(frequencies, expected, atol=0.01)


def test_alpha_zero_draws_starts_uniformly_with_unit_weights():
    buffer = buffer_with([[1.0, 10.0, 100.0], [1000.0, 2.0, 3.0]], alpha=0.0, beta=0.5)
    assert np.allclose(start_frequencies(buffer, draws=25600), 1 / 6, atol=0.01)
    assert torch.equal(buffer.sample_weighted(16)[2], torch.ones(16))


def test_importance_weights_match_hand_computed_values():
    # raw p = [[1, 4], [16, 4]], alpha = .5: p^alpha = [[1, 2], [4, 2]], P = [[1, 2], [4, 2]] / 9, N = 4.
    # beta = .5: w / max w = (p_min / p)^beta = [[1, .5^.5], [.25^.5, .5^.5]] = [[1, .70711], [.5, .70711]]
    buffer = buffer_with([[1.0, 4.0], [16.0, 4.0]], capacity=3, alpha=0.5, beta=0.5)
    env, position, weight = buffer.sample_weighted(64)
    expected = torch.tensor([[1.0, 0.70711], [0.5, 0.70711]])[env, position]
    assert torch.allclose(weight, expected, atol=1e-5)


def test_beta_anneals_to_one_over_anneal_step_samples():
    buffer = buffer_with([[1.0, 4.0]], beta=0.4, anneal_step=10)
    assert buffer.beta == pytest.approx(0.4)
    for _ in range(5):
        buffer.sample_weighted(4)
    assert buffer.beta == pytest.approx(0.7)
    for _ in range(5):
        buffer.sample_weighted(4)
    _, position, weight = buffer.sample_weighted(10)  # beta = 1: w = p_min / p
    assert torch.allclose(weight, torch.where(position == 0, 1.0, 0.25))
    assert buffer.beta == 1.0


def test_new_steps_get_the_largest_priority_so_far_and_one_at_first():
    buffer = PrioritizedTrajectoryBuffer(1, 4, alpha=1.0, beta=1.0, seed=0)
    buffer.extend(rows(0, 2, num_envs=1))
    _, position, weight = buffer.sample_weighted(4)  # both start at priority 1: stratified, two each
    assert sorted(position.tolist()) == [0, 0, 1, 1] and torch.equal(weight, torch.ones(4))
    buffer.update_priority(torch.tensor([0, 0]), torch.tensor([0, 1]), torch.tensor([1.0, 3.0]))
    buffer.extend(rows(2, 1, num_envs=1))  # gets 3
    _, position, _ = buffer.sample_weighted(7)  # mass [0, 1), [1, 4), [4, 7): one draw per unit
    assert position.tolist() == [0, 1, 1, 1, 2, 2, 2]


def test_overwritten_steps_take_the_new_steps_priority():
    buffer = buffer_with([[5.0, 1.0, 1.0]])  # max priority 5
    buffer.update_priority(torch.tensor([0]), torch.tensor([1]), torch.tensor([2.0]))
    buffer.extend(rows(3, 2, num_envs=1))  # positions 3, 4 overwrite 0 (priority 5) and 1 (2)
    _, position, _ = buffer.sample_weighted(11)  # p = [1, 5, 5] for positions 2, 3, 4
    assert sorted(position.tolist()) == [2] + [3] * 5 + [4] * 5  # drawn in slot order: 3, 4, 2


def test_updating_a_position_overwritten_since_it_was_sampled_is_ignored():
    buffer = PrioritizedTrajectoryBuffer(2, 3, alpha=1.0, beta=1.0, seed=0)
    buffer.extend(rows(0, 3))
    buffer.extend(rows(3, 1))  # position 3 overwrites position 0 in slot 0 of each env
    buffer.update_priority(torch.tensor([0, 1, 1]), torch.tensor([0, 0, 3]), torch.tensor([100.0, 100.0, 2.0]))
    env, position, _ = buffer.sample_weighted(7)  # p = 1, 1, 1 | 1, 1, 2 for positions 1, 2, 3
    assert sorted(zip(env.tolist(), position.tolist())) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3),
                                                            (1, 3)]
    buffer.extend(rows(4, 1))  # the ignored 100 did not raise the max priority: new steps get 2
    env, position, _ = buffer.sample_weighted(9)  # p = 1, 1, 2 | 1, 2, 2 for positions 2, 3, 4
    assert sorted(zip(env.tolist(), position.tolist())) == [(0, 2), (0, 3), (0, 4), (0, 4), (1, 2), (1, 3),
                                                            (1, 3), (1, 4), (1, 4)]


def test_repeated_pair_in_one_update_keeps_the_last_priority():
    buffer = buffer_with([[1.0, 1.0]])
    buffer.update_priority(torch.tensor([0, 0, 0]), torch.tensor([0, 1, 0]), torch.tensor([9.0, 2.0, 4.0]))
    _, position, weight = buffer.sample_weighted(6)  # mass [0, 4) for position 0, [4, 6) for 1
    assert position.tolist() == [0, 0, 0, 0, 1, 1]
    assert torch.allclose(weight, torch.tensor([0.5] * 4 + [1.0] * 2))


@pytest.mark.parametrize('value, problem', [(float('nan'), 'a NaN'), (float('inf'), 'an infinite'),
                                            (-1.0, 'a negative'), (0.0, 'a zero')])
def test_bad_priorities_raise_a_one_line_error_naming_the_problem(value: float, problem: str):
    buffer = buffer_with([[1.0, 1.0]])
    with pytest.raises(ReplayBufferError) as error:
        buffer.update_priority(torch.tensor([0, 0]), torch.tensor([0, 1]), torch.tensor([1.0, value]))
    assert str(error.value) == (f'update_priority got {problem} priority ({value}) at index 1; priorities must '
                                f'be finite and > 0 (add a small eps to the error)')
    assert '\n' not in str(error.value)


def test_update_priority_rejects_mismatched_sizes_unknown_positions_and_bad_env_ids():
    buffer = buffer_with([[1.0, 1.0]], capacity=4)
    with pytest.raises(ReplayBufferError, match=r'^update_priority got 2 \(env, position\) pairs but 1 priorities$'):
        buffer.update_priority(torch.tensor([0, 0]), torch.tensor([0, 1]), torch.tensor([1.0]))
    with pytest.raises(ReplayBufferError, match=r'^position 2 of env 0 is not stored \(never added\)'):
        buffer.update_priority(torch.tensor([0]), torch.tensor([2]), torch.tensor([1.0]))
    with pytest.raises(ReplayBufferError, match=r'^position -1 of env 0 is not stored \(negative\)'):
        buffer.update_priority(torch.tensor([0]), torch.tensor([-1]), torch.tensor([1.0]))
    with pytest.raises(ReplayBufferError, match='^env id 1 is out of range'):
        buffer.update_priority(torch.tensor([1]), torch.tensor([0]), torch.tensor([1.0]))


def test_length_above_one_never_starts_a_window_past_the_newest_step():
    # capacity 5, 7 steps: positions 2..6 stored, starts of 3 steps are 2, 3, 4. The newest two steps
    # get a huge priority and must still never be drawn as starts
    buffer = PrioritizedTrajectoryBuffer(2, 5, alpha=1.0, beta=1.0, seed=0)
    buffer.extend(rows(0, 7))
    buffer.update_priority(torch.tensor([0, 0, 0, 1, 1]), torch.tensor([3, 5, 6, 5, 6]),
                           torch.tensor([4.0, 1000.0, 1000.0, 1000.0, 1000.0]))
    before = buffer._sum_tree.leaf_values(10)
    frequencies = start_frequencies(buffer, draws=25600, length=3)  # p = [1, 4, 1 | 1, 1, 1] over starts
    expected = np.zeros((2, 7))
    expected[:, 2:5] = [[1, 4, 1], [1, 1, 1]]
    assert np.allclose(frequencies, expected / 9, atol=0.01)
    assert np.array_equal(buffer._sum_tree.leaf_values(10), before)  # the masked leaves are restored
    # weights: normalised by the smallest stored priority (1), so p_min / p with beta = 1
    env, position, weight = buffer.sample_weighted(18, length=3)
    assert torch.allclose(weight, torch.where((env == 0) & (position == 3), 0.25, 1.0))
    with pytest.raises(ReplayBufferError, match='^no env holds 6 steps yet'):
        buffer.sample_weighted(4, length=6)


def test_a_draw_rounded_onto_a_masked_start_goes_back_to_the_last_valid_start(monkeypatch):
    # rounding can put a draw at the very top of the mass; with length 2 the top leaf (slot 3,
    # position 3) is masked, so the draw must land on position 2, not on a window past the newest step
    buffer = buffer_with([[1.0, 1.0, 1.0, 1.0]])
    monkeypatch.setattr(torch, 'rand', lambda size, **kwargs: torch.ones(size, dtype=torch.float64))
    _, position, weight = buffer.sample_weighted(1, length=2)
    assert position.tolist() == [2] and weight.tolist() == [1.0]


def test_base_sample_positions_stays_uniform_on_the_prioritized_buffer():
    buffer = buffer_with([[1.0, 1.0, 100.0], [1.0, 1.0, 1.0]])
    env, position = buffer.sample_positions(6000)
    frequencies = np.bincount((env * 3 + position).numpy(), minlength=6) / 6000
    assert np.allclose(frequencies, 1 / 6, atol=0.02)


def test_same_seed_gives_the_same_draws_and_another_seed_does_not():

    def draws(seed: int) -> list[torch.Tensor]:
        buffer = buffer_with([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]], alpha=0.7, beta=0.4, anneal_step=5,
                             seed=seed)
        return [torch.stack([t.double() for t in buffer.sample_weighted(32, length=2)]) for _ in range(3)]

    assert all(torch.equal(a, b) for a, b in zip(draws(3), draws(3)))
    assert not all(torch.equal(a, b) for a, b in zip(draws(3), draws(4)))


def test_state_dict_round_trip_reproduces_the_next_samples_and_priorities():
    buffer = PrioritizedTrajectoryBuffer(3, 6, alpha=0.7, beta=0.4, anneal_step=50, seed=2)
    buffer.extend(rows(0, 4, num_envs=3))
    env, position, _ = buffer.sample_weighted(8, length=2)
    buffer.update_priority(env, position, torch.rand(8) * 5 + 0.1)
    buffer.sample_weighted(8)
    file = io.BytesIO()
    torch.save(buffer.state_dict(), file)
    file.seek(0)
    restored = PrioritizedTrajectoryBuffer(3, 6, alpha=0.7, beta=0.4, anneal_step=50, seed=5)
    restored.load_state_dict(torch.load(file, weights_only=True))

    assert restored.beta == buffer.beta
    for each in (buffer, restored):  # the largest priority carries over to new steps, which wrap
        each.extend(rows(4, 3, num_envs=3))
    for length in (1, 3):
        for expected, got in zip(buffer.sample_weighted(32, length), restored.sample_weighted(32, length)):
            assert torch.equal(expected, got)
    assert np.array_equal(buffer._sum_tree.leaf_values(18), restored._sum_tree.leaf_values(18))
    assert buffer._min_tree.min == restored._min_tree.min


def test_state_dict_holds_only_the_stored_priorities():
    buffer = PrioritizedTrajectoryBuffer(2, 8, alpha=1.0, beta=1.0, seed=0)
    buffer.extend(rows(0, 3))
    sd = buffer.state_dict()
    assert sd['priority'].shape == (2, 3) and sd['sample_count'] == 0
    empty = PrioritizedTrajectoryBuffer(2, 8, alpha=1.0, beta=1.0, seed=0)
    empty.load_state_dict(PrioritizedTrajectoryBuffer(2, 8, alpha=1.0, beta=1.0).state_dict())
    empty.extend(rows(0, 1))
    assert empty.sample_weighted(4)[2].tolist() == [1.0] * 4


def test_loading_a_uniform_state_or_another_alpha_raises():
    uniform = TrajectoryBuffer(2, 4)
    uniform.extend(rows(0, 2))
    with pytest.raises(CheckpointError, match='uniform TrajectoryBuffer'):
        PrioritizedTrajectoryBuffer(2, 4, alpha=0.6, beta=0.4).load_state_dict(uniform.state_dict())
    saved = PrioritizedTrajectoryBuffer(2, 4, alpha=0.6, beta=0.4).state_dict()
    with pytest.raises(CheckpointError, match='alpha=0.6'):
        PrioritizedTrajectoryBuffer(2, 4, alpha=0.5, beta=0.4).load_state_dict(saved)


def test_invalid_hyperparameters_raise_config_errors():
    with pytest.raises(ConfigError, match='alpha'):
        PrioritizedTrajectoryBuffer(2, 4, alpha=-1.0, beta=0.4)
    with pytest.raises(ConfigError, match='beta'):
        PrioritizedTrajectoryBuffer(2, 4, alpha=0.6, beta=1.5)
    with pytest.raises(ConfigError, match='anneal_step'):
        PrioritizedTrajectoryBuffer(2, 4, alpha=0.6, beta=0.4, anneal_step=-1)
