"""PPO's clipped losses and its diagnostics, on batches small enough to compute by hand."""
import math

import pytest
import torch
from torch.testing import assert_close

from tidal.rl_utils import explained_variance, normalize_advantage, ppo_policy_loss, ppo_value_loss

# ratios clipped above (A > 0) and below (A < 0), the same ratios with the other sign of A, one inside
RATIO = [1.5, 0.5, 1.5, 0.5, 1.1]
ADVANTAGE = [2.0, -1.0, -1.0, 2.0, 1.0]


def policy_batch():
    log_prob = torch.tensor(RATIO).log().requires_grad_()
    return log_prob, torch.zeros(5), torch.tensor(ADVANTAGE)


def test_clipped_surrogate_takes_the_pessimistic_term():
    log_prob, old_log_prob, advantage = policy_batch()
    loss, _, _ = ppo_policy_loss(log_prob, old_log_prob, advantage, clip_ratio=0.2)
    # min(r A, clip(r, 0.8, 1.2) A) per sample:
    #   r=1.5, A= 2: min(3.0, 1.2*2 = 2.4)    = 2.4   (clipped above)
    #   r=0.5, A=-1: min(-0.5, 0.8*-1 = -0.8) = -0.8  (clipped below)
    #   r=1.5, A=-1: min(-1.5, -1.2)          = -1.5  (unclipped: moving away is not forgiven)
    #   r=0.5, A= 2: min(1.0, 1.6)            = 1.0   (unclipped)
    #   r=1.1, A= 1: min(1.1, 1.1)            = 1.1   (inside the range)
    # loss = -(2.4 - 0.8 - 1.5 + 1.0 + 1.1) / 5 = -2.2 / 5 = -0.44
    assert loss.item() == pytest.approx(-0.44)


def test_clipped_samples_give_no_gradient():
    log_prob, old_log_prob, advantage = policy_batch()
    loss, _, _ = ppo_policy_loss(log_prob, old_log_prob, advantage, clip_ratio=0.2)
    loss.backward()
    # d(-r A / 5) / d log r = -r A / 5 where unclipped: -1.5*-1/5 = 0.3, -0.5*2/5 = -0.2, -1.1*1/5 = -0.22
    assert_close(log_prob.grad, torch.tensor([0.0, 0.0, 0.3, -0.2, -0.22]))


def test_approx_kl_and_clip_fraction_match_hand_computed_values():
    log_prob, old_log_prob, advantage = policy_batch()
    _, approx_kl, clip_fraction = ppo_policy_loss(log_prob, old_log_prob, advantage, clip_ratio=0.2)
    # (r - 1) - log r:  r=1.5: 0.5 - 0.4054651 = 0.0945349   r=0.5: -0.5 + 0.6931472 = 0.1931472
    #                   r=1.1: 0.1 - 0.0953102 = 0.0046898
    # mean = (2*0.0945349 + 2*0.1931472 + 0.0046898) / 5 = 0.5800540 / 5 = 0.1160108
    assert approx_kl.item() == pytest.approx(0.1160108, abs=1e-6)
    assert clip_fraction.item() == pytest.approx(4 / 5)  # |r - 1| > 0.2 for all but r = 1.1
    assert not approx_kl.requires_grad and not clip_fraction.requires_grad
    assert clip_fraction.dtype == torch.float32


def test_identical_policies_give_zero_kl_and_no_clipping():
    log_prob = torch.tensor([-1.0, -2.0])
    _, approx_kl, clip_fraction = ppo_policy_loss(log_prob, log_prob, torch.ones(2), clip_ratio=0.2)
    assert approx_kl.item() == 0.0 and clip_fraction.item() == 0.0


VALUE, OLD_VALUE, RETURNS = torch.tensor([1.0, 3.0, 0.25]), torch.tensor([2.0, 2.0, 0.0]), torch.tensor([0.0, 0.0, 1.0])


def test_value_loss_is_plain_mean_squared_error_without_clip():
    # ((1-0)^2 + (3-0)^2 + (0.25-1)^2) / 3 = (1 + 9 + 0.5625) / 3 = 10.5625 / 3
    assert ppo_value_loss(VALUE, OLD_VALUE, RETURNS, None).item() == pytest.approx(10.5625 / 3)


def test_value_clipping_takes_the_larger_error():
    loss = ppo_value_loss(VALUE, OLD_VALUE, RETURNS, clip_ratio=0.5)
    # clipped V = V_old + clip(V - V_old, -0.5, 0.5); per sample max((V - R)^2, (clipped V - R)^2):
    #   V=1,    V_old=2, R=0: clipped V = 1.5:  max(1, 2.25)       = 2.25  (clipping costs more)
    #   V=3,    V_old=2, R=0: clipped V = 2.5:  max(9, 6.25)       = 9     (unclipped costs more)
    #   V=0.25, V_old=0, R=1: clipped V = 0.25: max(0.5625, 0.5625) = 0.5625 (inside the range)
    # loss = (2.25 + 9 + 0.5625) / 3 = 11.8125 / 3 = 3.9375
    assert loss.item() == pytest.approx(3.9375)


def test_normalize_advantage_gives_zero_mean_unit_std():
    # mean 2.5, unbiased std sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3) = sqrt(5/3) = 1.2909944
    # -> (-1.5, -0.5, 0.5, 1.5) / 1.2909944 = (-1.1618950, -0.3872983, 0.3872983, 1.1618950)
    normalized = normalize_advantage(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert_close(normalized, torch.tensor([-1.1618950, -0.3872983, 0.3872983, 1.1618950]))


def test_normalize_advantage_of_one_sample_or_a_constant_batch_is_zeros_not_nan():
    assert normalize_advantage(torch.tensor([3.0])).tolist() == [0.0]
    assert normalize_advantage(torch.full((4,), 2.0)).tolist() == [0.0] * 4


def test_explained_variance_is_one_for_a_perfect_prediction():
    target = torch.tensor([1.0, 2.0, 3.0])
    assert explained_variance(target.clone(), target).item() == pytest.approx(1.0)


def test_explained_variance_is_zero_for_a_constant_prediction_at_the_mean():
    target = torch.tensor([1.0, 2.0, 3.0])
    assert explained_variance(torch.full((3,), 2.0), target).item() == pytest.approx(0.0, abs=1e-7)


def test_explained_variance_matches_hand_computed_value():
    # residual (0, 0, -1): var 1/3 - 1/9 = 2/9; target var 2/3; 1 - (2/9) / (2/3) = 2/3
    prediction, target = torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 2.0, 3.0])
    assert explained_variance(prediction, target).item() == pytest.approx(2 / 3)


def test_explained_variance_of_a_constant_target_is_zero():
    result = explained_variance(torch.tensor([0.0, 5.0]), torch.full((2,), 1.0))
    assert result.item() == 0.0 and not math.isnan(result.item())
