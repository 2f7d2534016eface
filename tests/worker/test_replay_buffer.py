import io

import numpy as np
import pytest
import torch

from tidal.base.errors import CheckpointError, ConfigError, TidalError
from tidal.worker.replay_buffer import ReplayBuffer, ReplayBufferError


def transitions(first: int, count: int) -> dict:
    """`count` Pendulum-like transitions whose reward is their number, so slots can be checked."""
    number = torch.arange(first, first + count, dtype=torch.float32)
    return {
        'obs': number[:, None].repeat(1, 3),
        'action': -number[:, None],
        'reward': number,
        'next_obs': number[:, None].repeat(1, 3) + 0.5,
        'terminated': torch.zeros(count, dtype=torch.bool),
        'truncated': torch.zeros(count, dtype=torch.bool),
    }


def stored_rewards(buffer: ReplayBuffer) -> list:
    return buffer.sample_index(torch.arange(len(buffer)))['reward'].tolist()


def test_sample_returns_columns_with_stored_shapes_dtypes_and_nested_obs():
    buffer = ReplayBuffer(10, seed=0)
    buffer.extend({
        'obs': {'observation': torch.randn(6, 4), 'action_mask': torch.ones(6, 2, dtype=torch.bool)},
        'action': torch.arange(6),
        'reward': torch.randn(6),
        'terminated': torch.zeros(6),
    })
    batch = buffer.sample(5)
    assert set(batch) == {'obs', 'action', 'reward', 'terminated', 'index'}
    assert batch['obs']['observation'].shape == (5, 4) and batch['obs']['observation'].dtype == torch.float32
    assert batch['obs']['action_mask'].shape == (5, 2) and batch['obs']['action_mask'].dtype == torch.bool
    assert batch['action'].shape == (5, ) and batch['action'].dtype == torch.int64
    assert batch['reward'].shape == (5, ) and batch['terminated'].dtype == torch.float32
    assert batch['index'].shape == (5, ) and batch['index'].dtype == torch.int64
    assert torch.equal(batch['action'], batch['index'])  # action i was stored in slot i


def test_numpy_columns_are_stored_as_tensors_of_the_same_dtype():
    buffer = ReplayBuffer(4, seed=0)
    obs = np.arange(6, dtype=np.float32).reshape(2, 3)
    obs.flags.writeable = False  # as gymnasium sometimes returns them
    buffer.extend({'obs': obs, 'action': np.array([1, 0])})
    batch = buffer.sample_index(torch.tensor([1, 0]))
    assert torch.equal(batch['obs'], torch.tensor([[3., 4., 5.], [0., 1., 2.]]))
    assert batch['action'].dtype == torch.int64 and batch['action'].tolist() == [0, 1]


def test_len_counts_stored_transitions_up_to_capacity():
    buffer = ReplayBuffer(5)
    assert len(buffer) == 0 and buffer.capacity == 5
    buffer.extend(transitions(0, 3))
    assert len(buffer) == 3
    buffer.extend(transitions(3, 4))
    assert len(buffer) == 5


def test_wraparound_overwrites_the_oldest_transitions_first():
    buffer = ReplayBuffer(5)
    buffer.extend(transitions(0, 3))
    buffer.extend(transitions(3, 4))  # slots 3, 4, then wraps to 0, 1
    assert stored_rewards(buffer) == [5., 6., 2., 3., 4.]
    buffer.extend(transitions(7, 1))
    assert stored_rewards(buffer) == [5., 6., 7., 3., 4.]


def test_extend_with_more_than_capacity_keeps_the_newest_capacity_transitions():
    buffer = ReplayBuffer(4)
    buffer.extend(transitions(100, 1))
    buffer.extend(transitions(0, 10))  # transition t of the 11 written lives in slot t % 4
    assert stored_rewards(buffer) == [7., 8., 9., 6.]
    buffer.extend(transitions(10, 1))  # the ring goes on where the big write left it
    assert stored_rewards(buffer) == [7., 8., 9., 10.]


def test_mismatched_shape_raises_error_naming_the_key_and_both_shapes():
    buffer = ReplayBuffer(4)
    buffer.extend({'obs': {'observation': torch.zeros(1, 4)}, 'reward': torch.zeros(1)})
    expected = r"'obs\.observation': expected per-transition shape \(4,\), got \(3,\)"
    with pytest.raises(ValueError, match=expected):
        buffer.extend({'obs': {'observation': torch.zeros(1, 3)}, 'reward': torch.zeros(1)})
    assert len(buffer) == 1  # nothing was written


def test_mismatched_dtype_raises_error_naming_the_key():
    buffer = ReplayBuffer(4)
    buffer.extend({'action': torch.zeros(1, dtype=torch.int64)})
    with pytest.raises(ReplayBufferError, match="'action': expected dtype torch.int64, got torch.float32"):
        buffer.extend({'action': torch.zeros(1)})


def test_missing_or_misspelled_key_raises_error_suggesting_the_column():
    buffer = ReplayBuffer(4)
    buffer.extend({'obs': torch.zeros(1, 3), 'reward': torch.zeros(1)})
    with pytest.raises(ReplayBufferError, match=r"missing column 'reward'; unexpected column 'rewrd' "
                       r"\(did you mean 'reward'\?\)"):
        buffer.extend({'obs': torch.zeros(1, 3), 'rewrd': torch.zeros(1)})


def test_columns_with_different_lengths_raise():
    with pytest.raises(ReplayBufferError, match='same number of transitions'):
        ReplayBuffer(4).extend({'obs': torch.zeros(2, 3), 'reward': torch.zeros(3)})


def test_scalar_column_and_reserved_column_name_raise():
    with pytest.raises(ReplayBufferError, match="column 'reward' is a scalar"):
        ReplayBuffer(4).extend({'reward': torch.tensor(1.0)})
    with pytest.raises(ReplayBufferError, match="'index' is reserved"):
        ReplayBuffer(4).extend({'index': torch.zeros(1)})


def test_buffer_errors_are_tidal_errors():
    assert issubclass(ReplayBufferError, TidalError) and issubclass(ReplayBufferError, ValueError)
    with pytest.raises(ConfigError, match='size must be a positive integer'):
        ReplayBuffer(0)


def test_sampling_an_empty_buffer_raises():
    with pytest.raises(ReplayBufferError, match='empty replay buffer'):
        ReplayBuffer(4).sample(2)


def test_stored_values_do_not_keep_the_autograd_graph():
    buffer = ReplayBuffer(4)
    obs = torch.ones(2, 3, requires_grad=True)
    buffer.extend({'obs': obs * 2})
    assert not buffer.sample(2)['obs'].requires_grad


def test_uniform_sampling_counts_pass_a_chi_square_bound():
    buffer = ReplayBuffer(16, seed=3)
    buffer.extend(transitions(0, 10))  # only the 10 stored slots may be drawn
    index = torch.cat([buffer.sample(256)['index'] for _ in range(200)])
    counts = torch.bincount(index, minlength=16).double()
    assert counts[10:].sum() == 0
    expected = index.numel() / 10
    chi_square = ((counts[:10] - expected)**2 / expected).sum().item()
    assert chi_square < 27.9  # the 0.999 quantile of chi-square with 9 degrees of freedom


def test_same_seed_gives_the_same_indices_and_another_seed_does_not():
    def draw(seed: int) -> torch.Tensor:
        buffer = ReplayBuffer(100, seed=seed)
        buffer.extend(transitions(0, 100))
        return torch.cat([buffer.sample(32)['index'] for _ in range(3)])

    assert torch.equal(draw(7), draw(7))
    assert not torch.equal(draw(7), draw(8))


def test_state_dict_round_trip_reproduces_the_next_sample_and_write_position():
    buffer = ReplayBuffer(8, seed=1)
    buffer.extend({'obs': {'observation': torch.randn(11, 3)}, 'reward': torch.randn(11)})
    buffer.sample(4)
    file = io.BytesIO()
    torch.save(buffer.state_dict(), file)
    file.seek(0)
    restored = ReplayBuffer(8, seed=99)
    restored.load_state_dict(torch.load(file))

    expected, got = buffer.sample(16), restored.sample(16)
    assert torch.equal(expected['index'], got['index'])
    assert torch.equal(expected['obs']['observation'], got['obs']['observation'])
    assert torch.equal(expected['reward'], got['reward'])
    for each in (buffer, restored):
        each.extend({'obs': {'observation': torch.full((1, 3), 5.0)}, 'reward': torch.tensor([5.0])})
    assert stored_rewards(buffer) == stored_rewards(restored)
    assert len(restored) == 8


def test_state_dict_holds_only_the_filled_slots():
    buffer = ReplayBuffer(1000)
    buffer.extend(transitions(0, 3))
    sd = buffer.state_dict()
    assert sd['columns']['obs'].shape == (3, 3) and sd['size'] == 3 and sd['cursor'] == 3


def test_state_dict_of_an_empty_buffer_loads_into_an_empty_buffer():
    restored = ReplayBuffer(4)
    restored.load_state_dict(ReplayBuffer(4).state_dict())
    assert len(restored) == 0
    restored.extend(transitions(0, 1))
    assert stored_rewards(restored) == [0.]


def test_loading_a_state_of_another_capacity_raises():
    buffer = ReplayBuffer(4)
    buffer.extend(transitions(0, 2))
    with pytest.raises(CheckpointError, match='capacity 4, this buffer has 8'):
        ReplayBuffer(8).load_state_dict(buffer.state_dict())
