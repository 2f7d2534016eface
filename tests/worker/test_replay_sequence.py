"""ReplayBuffer.sample_sequence: time-ordered sequences of one env's transitions, never across the ring seam."""
import pytest
import torch

from tidal.worker.replay_buffer import ReplayBuffer, ReplayBufferError


def interleaved(num_envs, first_step, steps):
    """Rows as a collector of `num_envs` envs writes them, step-major: env 0, env 1, ..., then the next step."""
    t = torch.arange(first_step, first_step + steps).repeat_interleave(num_envs)
    env = torch.arange(num_envs).repeat(steps)
    return {'env': env, 't': t, 'reward': t.float()}


def test_stride_keeps_every_sequence_inside_one_envs_stream():
    buffer = ReplayBuffer(100, seed=0)
    buffer.extend(interleaved(2, 0, 10))  # rows env0 t0, env1 t0, env0 t1, env1 t1, ...
    batch = buffer.sample_sequence(32, 3, stride=2)
    assert (batch['env'] == batch['env'][:, :1]).all()
    assert (batch['t'][:, 1:] - batch['t'][:, :-1] == 1).all()
    assert set(batch['env'][:, 0].tolist()) == {0, 1}  # both envs' streams are sampled


def test_sequences_never_cross_the_seam_after_the_ring_wrapped():
    buffer = ReplayBuffer(5, seed=0)
    buffer.extend(interleaved(1, 0, 8))
    buffer.extend(interleaved(1, 8, 4))  # 12 written: slots hold t = [10, 11, 7, 8, 9]
    batch = buffer.sample_sequence(64, 3)
    assert (batch['t'][:, 1:] - batch['t'][:, :-1] == 1).all()
    # the only sequences inside t = 7..11 start at 7, 8 or 9; all three are drawn
    assert set(batch['t'][:, 0].tolist()) == {7, 8, 9}


def test_strided_sequences_stay_in_one_env_after_an_odd_capacity_wrapped():
    buffer = ReplayBuffer(7, seed=0)
    buffer.extend(interleaved(2, 0, 10))  # 20 rows into 7 slots: the oldest held is row 13 (env 1, t 6)
    batch = buffer.sample_sequence(64, 3, stride=2)
    assert (batch['env'] == batch['env'][:, :1]).all()
    assert (batch['t'][:, 1:] - batch['t'][:, :-1] == 1).all()
    assert batch['t'].min() >= 6 and batch['t'].max() <= 9


def test_a_sequence_may_span_the_whole_buffer():
    buffer = ReplayBuffer(7, seed=0)
    buffer.extend(interleaved(1, 0, 9))  # holds t = 2..8 in slots [7, 8, 2, 3, 4, 5, 6]
    batch = buffer.sample_sequence(4, 4, stride=2)  # span (4 - 1) * 2 + 1 = 7 rows: one start only
    assert batch['t'].tolist() == [[2, 4, 6, 8]] * 4
    assert batch['index'].tolist() == [[2, 4, 6, 1]] * 4  # t lives in slot t % 7


def test_sequence_columns_are_batch_by_time_including_nested_obs_and_index():
    buffer = ReplayBuffer(20, seed=0)
    buffer.extend({
        'obs': {'observation': torch.randn(12, 4), 'action_mask': torch.ones(12, 2, dtype=torch.bool)},
        'action': torch.rand(12, 2),
        'reward': torch.arange(12.0),
        'step_type': torch.ones(12, dtype=torch.int8),
    })
    batch = buffer.sample_sequence(5, 3, stride=2)
    assert batch['obs']['observation'].shape == (5, 3, 4)
    assert batch['obs']['action_mask'].shape == (5, 3, 2) and batch['obs']['action_mask'].dtype == torch.bool
    assert batch['action'].shape == (5, 3, 2)
    assert batch['reward'].shape == (5, 3)
    assert batch['step_type'].shape == (5, 3) and batch['step_type'].dtype == torch.int8
    assert batch['index'].shape == (5, 3) and batch['index'].dtype == torch.int64
    assert torch.equal(batch['reward'], batch['index'].float())  # reward i was stored in slot i
    assert (batch['index'][:, 1:] - batch['index'][:, :-1] == 2).all()


def test_too_few_transitions_for_one_sequence_is_a_clear_error():
    buffer = ReplayBuffer(10, seed=0)
    buffer.extend(interleaved(1, 0, 5))
    with pytest.raises(ReplayBufferError, match=r'sequences of 4 steps 2 rows apart need 7 transitions, the buffer '
                                                r'holds 5; collect more before learning \(random_collect_size\)'):
        buffer.sample_sequence(2, 4, stride=2)


@pytest.mark.parametrize('length', [0, -1, 2.0, True])
def test_sequence_length_must_be_a_positive_integer(length):
    buffer = ReplayBuffer(10, seed=0)
    buffer.extend(interleaved(1, 0, 5))
    with pytest.raises(ReplayBufferError, match=f'sequence length must be a positive integer, got {length!r}'):
        buffer.sample_sequence(2, length)


def test_empty_buffer_refuses_sequences():
    with pytest.raises(ReplayBufferError, match='cannot sample from an empty replay buffer'):
        ReplayBuffer(10, seed=0).sample_sequence(2, 3)


def test_same_seed_gives_the_same_sequences():
    def draw(seed):
        buffer = ReplayBuffer(50, seed=seed)
        buffer.extend(interleaved(2, 0, 20))
        return [buffer.sample_sequence(8, 4, stride=2)['index'] for _ in range(3)]

    first, again, other = draw(3), draw(3), draw(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))


def test_state_dict_resumes_the_same_sequences():
    buffer = ReplayBuffer(50, seed=0)
    buffer.extend(interleaved(2, 0, 20))
    buffer.sample_sequence(8, 4, stride=2)
    clone = ReplayBuffer(50, seed=123)
    clone.load_state_dict(buffer.state_dict())
    assert torch.equal(clone.sample_sequence(8, 4, stride=2)['t'], buffer.sample_sequence(8, 4, stride=2)['t'])
