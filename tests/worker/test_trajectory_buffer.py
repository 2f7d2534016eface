import io

import pytest
import torch

from tidal.base.errors import CheckpointError, ConfigError
from tidal.worker.trajectory_buffer import ReplayBufferError, TrajectoryBuffer


def rows(first: int, steps: int, num_envs: int = 3, terminated=(), truncated=()) -> dict:
    """`steps` step-major collector rows of `num_envs` envs from position `first` on: row k * num_envs + i
    is env i's step first + k, its reward 100 * env + position. `terminated` / `truncated` list the
    (env, position) pairs whose flag is set."""
    position = torch.arange(first, first + steps).repeat_interleave(num_envs)
    env = torch.arange(num_envs).repeat(steps)

    def flags(pairs) -> torch.Tensor:
        return torch.tensor([(int(e), int(p)) in set(pairs) for e, p in zip(env, position)], dtype=torch.bool)

    return {
        'obs': torch.stack([env, position], dim=1).float(),
        'reward': (100 * env + position).float(),
        'terminated': flags(terminated),
        'truncated': flags(truncated),
    }


ALL_ENVS = torch.arange(3)[:, None]  # broadcasts against a row of positions


def test_get_reads_each_env_and_position_back_from_step_major_rows_across_extends():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=16)
    for first, steps in ((0, 2), (2, 3), (5, 4)):
        buffer.extend(rows(first, steps))
    batch = buffer.get(ALL_ENVS, torch.arange(9))
    assert batch['reward'].shape == (3, 9) and batch['obs'].shape == (3, 9, 2)
    assert torch.equal(batch['reward'], (100 * ALL_ENVS + torch.arange(9)).float())
    assert torch.equal(batch['obs'][2, 7], torch.tensor([2., 7.]))
    assert buffer.current_position().tolist() == [9, 9, 9]  # and position 0 of every env was read back above
    assert len(buffer) == 27


def test_wraparound_overwrites_each_envs_oldest_positions_and_reading_them_raises():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=5)
    for first, steps in ((0, 2), (2, 3), (5, 4)):
        buffer.extend(rows(first, steps))
    assert len(buffer) == 15
    reward = buffer.get(ALL_ENVS, torch.arange(4, 9))['reward']
    assert torch.equal(reward, (100 * ALL_ENVS + torch.arange(4, 9)).float())
    with pytest.raises(ReplayBufferError, match=r'^position 3 of env 1 is not stored \(overwritten\); '
                       r'env 1 holds positions \[4, 9\)$'):
        buffer.get(torch.tensor([0, 1]), torch.tensor([4, 3]))

    buffer.extend(rows(9, 7))  # more steps than the capacity: only the newest 5 of each env survive
    assert buffer.current_position().tolist() == [16, 16, 16]
    reward = buffer.get(ALL_ENVS, torch.arange(11, 16))['reward']
    assert torch.equal(reward, (100 * ALL_ENVS + torch.arange(11, 16)).float())
    for env in range(3):  # each env's oldest stored position is now 11
        with pytest.raises(ReplayBufferError, match=rf'^position 10 of env {env} is not stored \(overwritten\); '
                           rf'env {env} holds positions \[11, 16\)$'):
            buffer.get(torch.tensor([env]), torch.tensor([10]))


def test_uint8_and_nested_dict_columns_keep_dtype_and_leaf_shape():
    buffer = TrajectoryBuffer(num_envs=2, capacity_per_env=4)
    pixels = torch.arange(3 * 2 * 4, dtype=torch.uint8).reshape(6, 2, 2)  # row r holds 4r .. 4r + 3
    batch = rows(0, 3, num_envs=2)
    batch['obs'] = {'pixels': pixels, 'action_mask': torch.ones(6, 3, dtype=torch.bool)}
    batch['action'] = torch.arange(6)
    buffer.extend(batch)
    got = buffer.get(torch.tensor([[1], [0]]), torch.tensor([[2, 0]]), keys=['obs', 'action'])
    assert set(got) == {'obs', 'action'}
    assert got['obs']['pixels'].dtype == torch.uint8 and got['obs']['pixels'].shape == (2, 2, 2, 2)
    assert got['obs']['action_mask'].dtype == torch.bool and got['obs']['action_mask'].shape == (2, 2, 3)
    assert got['action'].tolist() == [[5, 1], [4, 0]]  # env e's step p was row 2p + e
    assert torch.equal(got['obs']['pixels'][0, 0], pixels[5])


def test_steps_to_episode_end_counts_to_the_terminated_or_truncated_step_or_the_current_end():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=16)
    # env 0 terminates at 1, 2 and 5 (the episode 3..5 spans two extends); env 1 is truncated at 3;
    # env 2's episode is still running
    ends = {'terminated': [(0, 1), (0, 2), (0, 5)], 'truncated': [(1, 3)]}
    buffer.extend(rows(0, 4, **ends))
    buffer.extend(rows(4, 3, **ends))
    expected = [[1, 0, 0, 2, 1, 0, 0], [3, 2, 1, 0, 2, 1, 0], [6, 5, 4, 3, 2, 1, 0]]
    assert buffer.steps_to_episode_end(ALL_ENVS, torch.arange(7)).tolist() == expected

    buffer.extend(rows(7, 1, terminated=[(2, 7)]))  # env 2's episode ends; env 1's still runs
    steps = buffer.steps_to_episode_end(ALL_ENVS, torch.arange(8))
    assert steps.tolist() == [[1, 0, 0, 2, 1, 0, 1, 0], [3, 2, 1, 0, 3, 2, 1, 0], [7, 6, 5, 4, 3, 2, 1, 0]]


def test_steps_to_episode_end_across_wraparound_and_an_extend_longer_than_the_ring():
    buffer = TrajectoryBuffer(num_envs=2, capacity_per_env=4)
    for first in (0, 3, 6):
        buffer.extend(rows(first, 3, num_envs=2, terminated=[(0, 6)]))
    positions = torch.arange(5, 9)
    assert buffer.steps_to_episode_end(torch.tensor([[0], [1]]), positions).tolist() == [[1, 0, 1, 0],
                                                                                          [3, 2, 1, 0]]
    # env 1's episode began at position 0, before the oldest stored step 8
    buffer.extend(rows(9, 3, num_envs=2, terminated=[(0, 10)], truncated=[(1, 11)]))
    positions = torch.arange(8, 12)
    assert buffer.steps_to_episode_end(torch.tensor([[0], [1]]), positions).tolist() == [[2, 1, 0, 0],
                                                                                          [3, 2, 1, 0]]
    buffer.extend(rows(12, 6, num_envs=2, terminated=[(0, 13), (0, 16)]))
    positions = torch.arange(14, 18)
    assert buffer.steps_to_episode_end(torch.tensor([[0], [1]]), positions).tolist() == [[2, 1, 0, 0],
                                                                                          [3, 2, 1, 0]]
    # env 1's running episode (12 ..) ends at 18: its stored steps 16, 17 (slots 0, 1) learn the end
    buffer.extend(rows(18, 2, num_envs=2, terminated=[(1, 18)]))
    positions = torch.arange(16, 20)
    assert buffer.steps_to_episode_end(torch.tensor([1]), positions).tolist() == [2, 1, 0, 0]
    with pytest.raises(ReplayBufferError, match=r'^position 15 of env 1 is not stored \(overwritten\)'):
        buffer.steps_to_episode_end(torch.tensor([1]), torch.tensor([15]))


def test_sample_positions_returns_only_starts_whose_length_steps_are_stored():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=6, seed=0)
    buffer.extend(rows(0, 8))  # each env holds positions 2 .. 7
    env, start = buffer.sample_positions(3000, length=3)
    assert env.shape == start.shape == (3000, ) and env.dtype == start.dtype == torch.int64
    pairs = torch.bincount(env * 8 + start, minlength=24).reshape(3, 8)
    assert (pairs[:, [0, 1, 6, 7]] == 0).all()  # 2 .. 5 are the only starts with 3 stored steps
    assert (pairs[:, 2:6] > 150).all()  # 250 expected for each of the 12 pairs
    reward = buffer.get(env[:, None], start[:, None] + torch.arange(3))['reward']
    assert torch.equal(reward, (100 * env[:, None] + start[:, None] + torch.arange(3)).float())
    with pytest.raises(ReplayBufferError, match=r'^no env holds 7 steps yet \(each holds at most 6 of 6\)'):
        buffer.sample_positions(1, length=7)


def test_same_seed_gives_the_same_positions_and_another_seed_does_not():
    def draw(seed: int) -> torch.Tensor:
        buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=50, seed=seed)
        buffer.extend(rows(0, 40))
        return torch.cat([torch.stack(buffer.sample_positions(32, length=5)) for _ in range(3)], dim=1)

    assert torch.equal(draw(7), draw(7))
    assert not torch.equal(draw(7), draw(8))


def test_state_dict_round_trip_gives_identical_reads_samples_and_episode_ends():
    ends = {'terminated': [(0, 2), (1, 10), (2, 10)], 'truncated': [(1, 6)]}
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=6, seed=1)
    for first, steps in ((0, 4), (4, 5)):
        batch = rows(first, steps, **ends)
        batch['obs'] = {'pixels': batch['obs'].to(torch.uint8), 'position': batch['obs'][:, 1]}
        buffer.extend(batch)
    buffer.sample_positions(4, length=2)
    file = io.BytesIO()
    torch.save(buffer.state_dict(), file)
    file.seek(0)
    restored = TrajectoryBuffer(num_envs=3, capacity_per_env=6, seed=99)
    restored.load_state_dict(torch.load(file, weights_only=True))

    positions = torch.arange(3, 9)
    expected, got = buffer.get(ALL_ENVS, positions), restored.get(ALL_ENVS, positions)
    assert torch.equal(expected['obs']['pixels'], got['obs']['pixels'])
    assert got['obs']['pixels'].dtype == torch.uint8
    assert torch.equal(expected['obs']['position'], got['obs']['position'])
    assert torch.equal(expected['reward'], got['reward'])
    assert torch.equal(expected['terminated'], got['terminated'])
    assert torch.equal(buffer.steps_to_episode_end(ALL_ENVS, positions),
                       restored.steps_to_episode_end(ALL_ENVS, positions))
    assert torch.equal(buffer.current_position(), restored.current_position())
    for a, b in zip(buffer.sample_positions(64, length=2), restored.sample_positions(64, length=2)):
        assert torch.equal(a, b)
    # the episode bookkeeping carries on: env 1's and env 2's running episodes end after the load
    for each in (buffer, restored):
        batch = rows(9, 2, **ends)
        batch['obs'] = {'pixels': batch['obs'].to(torch.uint8), 'position': batch['obs'][:, 1]}
        each.extend(batch)
    positions = torch.arange(5, 11)
    expected = [[5, 4, 3, 2, 1, 0], [1, 0, 3, 2, 1, 0], [5, 4, 3, 2, 1, 0]]
    assert restored.steps_to_episode_end(ALL_ENVS, positions).tolist() == expected
    assert buffer.steps_to_episode_end(ALL_ENVS, positions).tolist() == expected


def test_state_dict_holds_only_the_stored_steps_and_an_empty_state_loads():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=1000)
    buffer.extend(rows(0, 3))
    sd = buffer.state_dict()
    assert sd['columns']['obs'].shape == (3, 3, 2) and sd['episode_end'].shape == (3, 3)
    restored = TrajectoryBuffer(num_envs=3, capacity_per_env=1000)
    restored.load_state_dict(TrajectoryBuffer(num_envs=3, capacity_per_env=1000).state_dict())
    assert len(restored) == 0
    restored.extend(rows(0, 1))
    assert restored.get(torch.tensor([2]), torch.tensor([0]))['reward'].tolist() == [200.]


def test_loading_a_state_of_other_sizes_raises_a_one_line_checkpoint_error():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=6)
    buffer.extend(rows(0, 2))
    with pytest.raises(CheckpointError, match=r'^trajectory buffer state has 3 envs x 6 steps, this buffer '
                       r'has 2 x 6; build the buffer with the saved sizes$'):
        TrajectoryBuffer(num_envs=2, capacity_per_env=6).load_state_dict(buffer.state_dict())


def test_batch_without_terminated_column_raises_one_line_error_naming_it():
    batch = rows(0, 2)
    del batch['terminated']
    with pytest.raises(ReplayBufferError) as err:
        TrajectoryBuffer(num_envs=3, capacity_per_env=4).extend(batch)
    assert str(err.value) == ("batch has no 'terminated' column; the trajectory buffer needs boolean "
                              "'terminated' and 'truncated' columns to find episode ends")


def test_malformed_batches_raise_before_anything_is_written():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=4)
    batch = rows(0, 2)
    batch['truncated'] = batch['truncated'].float()
    with pytest.raises(ReplayBufferError, match=r"^column 'truncated' must be a boolean flag per row \(shape "
                       r"\[N\]\), got torch.float32 of shape \(6,\)$"):
        buffer.extend(batch)
    with pytest.raises(ReplayBufferError, match='^a batch of 4 rows cannot be split into steps of 3 envs'):
        buffer.extend({key: value[:4] for key, value in rows(0, 2).items()})
    buffer.extend(rows(0, 1))
    batch = rows(1, 1)
    batch['rewrd'] = batch.pop('reward')
    with pytest.raises(ReplayBufferError, match=r"missing column 'reward'; unexpected column 'rewrd' "
                       r"\(did you mean 'reward'\?\)"):
        buffer.extend(batch)
    assert buffer.current_position().tolist() == [1, 1, 1]


def test_bad_reads_raise_one_line_errors_naming_the_env_position_or_key():
    buffer = TrajectoryBuffer(num_envs=3, capacity_per_env=4)
    buffer.extend(rows(0, 2))
    with pytest.raises(ReplayBufferError, match=r'^position 2 of env 0 is not stored \(never added\); env 0 '
                       r'holds positions \[0, 2\)$'):
        buffer.get(torch.tensor([1, 0]), torch.tensor([1, 2]))
    with pytest.raises(ReplayBufferError, match='^env id 3 is out of range; the buffer has 3 envs$'):
        buffer.steps_to_episode_end(torch.tensor([3]), torch.tensor([0]))
    with pytest.raises(ReplayBufferError, match=r"^the buffer has no column 'rewards' \(did you mean 'reward'\?\)$"):
        buffer.get(torch.tensor([0]), torch.tensor([0]), keys=['rewards'])
    with pytest.raises(ConfigError, match='capacity_per_env must be a positive integer, got 0'):
        TrajectoryBuffer(num_envs=3, capacity_per_env=0)
