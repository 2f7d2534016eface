"""Running mean/std and VecNormalize-style reward scaling."""
import io

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from tidal.base.errors import TidalError
from tidal.rl_utils.normalizer import NormalizerError, RewardScaler, RunningMeanStd, moments_added


def merge_updates(base, updated):
    """`base` with what each copy in `updated` (started from `base`) folded in merged back, as the Ray
    collector merges its workers' statistics: `moments_added`, then `merge_moments`."""
    merged = RunningMeanStd(tuple(base['mean'].shape), 'cpu')
    merged.load_state_dict(base)
    for state in updated:
        added = moments_added(base, state)
        if added is not None:
            merged.merge_moments(*added)
    return merged.state_dict()


def save_and_load(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_running_moments_after_several_batches_equal_numpys_over_the_concatenation():
    generator = torch.Generator().manual_seed(0)
    batches = [torch.randn(size, 3, generator=generator) * 2.0 + 3.0 for size in (5, 1, 17, 64)]
    rms = RunningMeanStd((3,), 'cpu', epsilon=0.0)  # no prior: the statistics are the samples' own
    for batch in batches:
        rms.update(batch)
    everything = torch.cat(batches).double().numpy()
    np.testing.assert_allclose(rms.mean.numpy(), everything.mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(rms.var.numpy(), everything.var(axis=0), atol=1e-6)
    assert rms.count.item() == 87
    assert rms.mean.dtype == rms.var.dtype == torch.float64


def test_the_default_prior_weighs_almost_nothing():
    rms = RunningMeanStd((), 'cpu')
    rms.update(torch.tensor([1.0, 3.0]))
    # count 2.0001; mean 2 * 2 / 2.0001; var (1e-4 * 1 + 2 * 1 + 2^2 * 1e-4 * 2 / 2.0001) / 2.0001
    assert rms.count.item() == pytest.approx(2.0001)
    assert rms.mean.item() == pytest.approx(1.99990000, abs=1e-8)
    assert rms.var.item() == pytest.approx(1.00019998, abs=1e-8)


def test_normalize_centres_scales_and_clips_to_float32():
    rms = RunningMeanStd((3,), 'cpu', epsilon=0.0)
    rms.update(torch.tensor([[0.0, 0.0, 0.0], [2.0, 4.0, 6.0]]))  # mean (1, 2, 3), var (1, 4, 9)
    normalized = rms.normalize(torch.tensor([[100.0, -100.0, 4.5]]), clip=5.0)
    # (100 - 1) / 1 -> clipped to 5; (-100 - 2) / 2 -> clipped to -5; (4.5 - 3) / 3 = 0.5
    assert_close(normalized, torch.tensor([[5.0, -5.0, 0.5]]))
    assert normalized.dtype == torch.float32


def test_running_mean_std_state_round_trips_through_torch_save():
    rms = RunningMeanStd((2,), 'cpu')
    rms.update(torch.tensor([[1.0, 2.0], [3.0, 5.0], [4.0, -1.0]]))
    restored = RunningMeanStd((2,), 'cpu')
    restored.load_state_dict(save_and_load(rms.state_dict()))
    for key in ('mean', 'var', 'count'):
        assert torch.equal(getattr(restored, key), getattr(rms, key))


def test_state_dict_is_a_copy():
    rms = RunningMeanStd((2,), 'cpu')
    state = rms.state_dict()
    rms.update(torch.ones(4, 2))
    assert state['mean'].tolist() == [0.0, 0.0]


def test_loading_a_state_of_another_shape_names_both_shapes():
    rms = RunningMeanStd((3,), 'cpu')
    with pytest.raises(NormalizerError, match=r'shape \(2,\), this one has shape \(3,\)') as error:
        rms.load_state_dict(RunningMeanStd((2,), 'cpu').state_dict())
    assert isinstance(error.value, (TidalError, ValueError))


def test_update_with_a_batch_of_the_wrong_shape_is_an_error():
    with pytest.raises(NormalizerError, match=r'shape \(3,\) got a batch of shape \(4, 2\)'):
        RunningMeanStd((3,), 'cpu').update(torch.zeros(4, 2))


def test_reward_scaler_matches_a_hand_computed_two_step_example():
    scaler = RewardScaler(gamma=0.5, clip=10.0, device='cpu')
    # step 1: returns = 0 * 0.5 + (1, 2) = (1, 2): batch mean 1.5, var 0.25, n 2, merged into the
    # prior (count 1e-4, mean 0, var 1): count 2.0001, mean 1.5 * 2 / 2.0001 = 1.49992500,
    # var (1e-4 * 1 + 2 * 0.25 + 1.5^2 * 1e-4 * 2 / 2.0001) / 2.0001 = 0.25014999
    # scaled = (1, 2) / sqrt(0.25014999 + 1e-8) = (1.99940028, 3.99880056)
    scaled = scaler.scale(torch.tensor([1.0, 2.0]), torch.tensor([False, True]))
    assert_close(scaled, torch.tensor([1.99940028, 3.99880056]))
    assert scaler.returns.tolist() == [1.0, 0.0]  # env 1's episode ended: its return restarts
    # step 2: returns = (1 * 0.5 + 2, 0 * 0.5 + 4) = (2.5, 4): batch mean 3.25, var 0.5625, n 2;
    # delta = 3.25 - 1.49992500 = 1.75007500, count 4.0001,
    # var (0.25014999 * 2.0001 + 0.5625 * 2 + 1.750075^2 * 2.0001 * 2 / 4.0001) / 4.0001 = 1.17201171
    # (the four returns' own variance is 1.171875; the prior moves it by 1e-4)
    # scaled = (2, 4) / sqrt(1.17201171 + 1e-8) = (1.84741310, 3.69482619)
    scaled = scaler.scale(torch.tensor([2.0, 4.0]), torch.tensor([False, False]))
    assert_close(scaled, torch.tensor([1.84741310, 3.69482619]))
    assert scaler.returns.tolist() == [2.5, 4.0]
    assert scaler.return_rms.var.item() == pytest.approx(1.17201171, abs=1e-8)
    assert scaled.dtype == torch.float32


def test_reward_scaler_update_folds_the_returns_and_normalize_scales_without_updating():
    # the two steps of the hand-computed example above, folded without scaling: var 1.17201171 after them
    scaler = RewardScaler(gamma=0.5, clip=10.0, device='cpu')
    scaler.update(torch.tensor([1.0, 2.0]), torch.tensor([False, True]))
    scaler.update(torch.tensor([2.0, 4.0]), torch.tensor([False, False]))
    assert scaler.returns.tolist() == [2.5, 4.0]
    assert scaler.return_rms.var.item() == pytest.approx(1.17201171, abs=1e-8)
    # replayed rewards (1, -3, 20) / sqrt(1.17201171 + 1e-8) = (0.92370655, -2.77111965, 18.47413098), clipped at 10
    scaled = scaler.normalize(torch.tensor([1.0, -3.0, 20.0]))
    assert_close(scaled, torch.tensor([0.92370655, -2.77111965, 10.0]))
    assert scaled.dtype == torch.float32
    assert scaler.return_rms.count.item() == pytest.approx(4.0001)  # normalize folded nothing in
    clipped = RewardScaler(gamma=0.5, clip=1.0, device='cpu')
    clipped.load_state_dict(scaler.state_dict())
    assert_close(clipped.normalize(torch.tensor([[1.0, -3.0]])), torch.tensor([[0.92370655, -1.0]]))


def test_reward_scaler_update_gives_the_return_statistics_scale_folds():
    scaling, updating = (RewardScaler(gamma=0.9, clip=10.0, device='cpu') for _ in range(2))
    for reward, done in (([1.0, -2.0, 0.5], [False, True, False]), ([0.0, 3.0, 1.0], [True, False, False])):
        step = torch.tensor(reward), torch.tensor(done)
        scaled = scaling.scale(*step)
        updating.update(*step)
        assert torch.equal(updating.normalize(step[0]), scaled)
    assert torch.equal(updating.returns, scaling.returns)


def test_reward_scaler_clips_and_keeps_the_sign():
    scaler = RewardScaler(gamma=0.99, clip=1.0, device='cpu')
    scaler.scale(torch.tensor([0.1, -0.1]), torch.tensor([False, False]))  # returns' std ~0.1
    assert scaler.scale(torch.tensor([50.0, -50.0]), torch.tensor([False, False])).tolist() == [1.0, -1.0]


def test_reward_scaler_refuses_a_different_number_of_envs():
    scaler = RewardScaler(gamma=0.99, clip=10.0, device='cpu')
    scaler.scale(torch.zeros(2), torch.zeros(2, dtype=torch.bool))
    with pytest.raises(NormalizerError, match=r'returns of \(2,\) envs, got rewards of shape \(3,\)'):
        scaler.scale(torch.zeros(3), torch.zeros(3, dtype=torch.bool))


def test_reward_scaler_state_round_trips_through_torch_save():
    fresh = RewardScaler(gamma=0.9, clip=10.0, device='cpu')
    restored = RewardScaler(gamma=0.9, clip=10.0, device='cpu')
    restored.load_state_dict(save_and_load(fresh.state_dict()))
    assert restored.returns is None

    scaler = RewardScaler(gamma=0.9, clip=10.0, device='cpu')
    for reward in ([1.0, -2.0, 0.5], [0.0, 3.0, 1.0]):
        scaler.scale(torch.tensor(reward), torch.tensor([False, True, False]))
    restored.load_state_dict(save_and_load(scaler.state_dict()))
    assert torch.equal(restored.returns, scaler.returns)
    for key in ('mean', 'var', 'count'):
        assert torch.equal(getattr(restored.return_rms, key), getattr(scaler.return_rms, key))
    # and the two go on identically
    step = (torch.tensor([2.0, 2.0, 2.0]), torch.tensor([False, False, True]))
    assert torch.equal(restored.scale(*step), scaler.scale(*step))


def test_merge_updates_equals_one_normaliser_that_saw_every_batch():
    # two workers start from the same statistics and fold in their own data; the merge must equal
    # one normaliser that saw the base data and then both batches
    torch.manual_seed(0)
    base = RunningMeanStd((3,), 'cpu')
    base.update(torch.randn(50, 3) * 2 + 1)
    batches = [torch.randn(40, 3) * 5 - 3, torch.randn(70, 3) + 10]
    copies = []
    for batch in batches:
        copy = RunningMeanStd((3,), 'cpu')
        copy.load_state_dict(base.state_dict())
        copy.update(batch[:25])
        copy.update(batch[25:])
        copies.append(copy.state_dict())
    merged = merge_updates(base.state_dict(), copies)
    expected = RunningMeanStd((3,), 'cpu')
    expected.load_state_dict(base.state_dict())
    for batch in batches:
        expected.update(batch)
    for key in ('mean', 'var', 'count'):
        assert torch.allclose(merged[key], expected.state_dict()[key], rtol=1e-10, atol=1e-10)
    # a worker that saw nothing changes nothing
    assert torch.equal(merge_updates(base.state_dict(), [base.state_dict()])['mean'], base.state_dict()['mean'])


def run_statistics_and_scaler():
    """One env, then four: the moments, the scaled rewards and a merge of a copy's update."""
    rng = np.random.default_rng(3)
    rms, scaler = RunningMeanStd((3,), 'cpu'), RewardScaler(0.9, 5.0, 'cpu')
    scaled = []
    for envs in (1, 1, 4, 4):
        rms.update(torch.as_tensor(rng.normal(2.0, 3.0, (envs, 3)), dtype=torch.float32))
    for _ in range(6):
        scaled.append(scaler.scale(torch.as_tensor(rng.normal(0, 2, 4), dtype=torch.float32),
                                  torch.as_tensor(rng.random(4) < 0.3)))
    copy = RunningMeanStd((3,), 'cpu')
    copy.load_state_dict(rms.state_dict())
    copy.update(torch.ones(2, 3))
    merged = merge_updates(rms.state_dict(), [copy.state_dict()])
    return rms.state_dict(), scaler.state_dict(), torch.stack(scaled), merged


def test_the_cpus_numpy_arithmetic_equals_the_tensor_arithmetic_other_devices_run(monkeypatch):
    on_cpu = run_statistics_and_scaler()
    assert isinstance(RunningMeanStd((3,), 'cpu').native_var, np.ndarray)
    monkeypatch.setattr('tidal.rl_utils.normalizer._native', lambda tensor: tensor)  # the path of cuda tensors
    assert isinstance(RunningMeanStd((3,), 'cpu').native_var, torch.Tensor)
    assert_close(run_statistics_and_scaler(), on_cpu, rtol=1e-12, atol=1e-12)
