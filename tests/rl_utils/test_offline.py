"""The offline losses against values worked by hand (and torch.distributions for the Gaussian)."""
import math

import pytest
import torch
from torch.distributions import Normal
from torch.testing import assert_close

from tidal.rl_utils import (advantage_weights, cql_penalty, discrete_cql_penalty, expectile_loss, gaussian_log_prob,
                            td3_bc_actor_loss)


def test_the_expectile_loss_weighs_positive_errors_by_tau_and_negative_ones_by_one_minus_tau():
    diff = torch.tensor([2.0, -1.0, 0.5, -3.0])
    # 0.7 * 4 + 0.3 * 1 + 0.7 * 0.25 + 0.3 * 9 = 2.8 + 0.3 + 0.175 + 2.7, over 4
    assert float(expectile_loss(diff, 0.7)) == pytest.approx((2.8 + 0.3 + 0.175 + 2.7) / 4)
    assert float(expectile_loss(diff, 0.5)) == pytest.approx(0.5 * float(diff.pow(2).mean()))


def test_the_expectile_a_minimiser_fits_lies_above_the_mean_for_tau_above_half():
    values = torch.tensor([0.0, 0.0, 0.0, 4.0])
    v = torch.zeros((), requires_grad=True)
    optimizer = torch.optim.SGD([v], lr=0.5)
    for _ in range(500):
        optimizer.zero_grad()
        expectile_loss(values - v, 0.9).backward()
        optimizer.step()
    # the 0.9-expectile m solves 0.9 (4 - m) = 0.1 * 3 m: m = 3.6 / 1.2 = 3
    assert float(v.detach()) == pytest.approx(3.0, abs=1e-4)


def test_advantage_weights_are_exp_beta_a_clipped_at_the_largest_weight():
    weights = advantage_weights(torch.tensor([0.0, 1.0, 10.0]), beta=3.0, max_weight=100.0)
    assert_close(weights, torch.tensor([1.0, math.exp(3.0), 100.0]))


def test_the_gaussian_log_prob_sums_a_diagonal_normal_over_the_action():
    mean, log_std = torch.tensor([[0.2, -0.4]]), torch.tensor([[-1.0, 0.5]])
    action = torch.tensor([[0.5, 0.1]])
    expected = Normal(mean, log_std.exp()).log_prob(action).sum(-1)
    assert_close(gaussian_log_prob(mean, log_std, action), expected)


def test_td3_bc_scales_q_by_alpha_over_its_mean_magnitude_and_adds_the_squared_error():
    q = torch.tensor([2.0, -4.0])  # mean |Q| = 3, lambda = 2.5 / 3
    action = torch.tensor([[0.5], [0.0]], requires_grad=True)
    loss, lmbda = td3_bc_actor_loss(q, action, torch.tensor([[0.0], [1.0]]), alpha=2.5)
    # -lambda mean Q = -(2.5 / 3) * (-1) ; mean squared error (0.25 + 1) / 2
    assert float(lmbda) == pytest.approx(2.5 / 3)
    assert float(loss) == pytest.approx(2.5 / 3 + 0.625)


def test_the_lambda_of_td3_bc_is_held_constant_in_the_gradient():
    q = torch.tensor([2.0, -4.0], requires_grad=True)
    loss, _ = td3_bc_actor_loss(q, torch.zeros(2, 1), torch.zeros(2, 1), alpha=3.0)
    loss.backward()
    assert_close(q.grad, torch.full((2,), -(3.0 / 3.0) / 2))  # d(-lambda mean Q)/dQ_i = -lambda / B


def test_the_cql_penalty_is_the_importance_weighted_log_sum_exp_less_the_data_value():
    # one critic, two proposals, one state: Q = [1, 3] at log densities [0, log 2]; Q(s, a_data) = 2
    q_sampled = torch.tensor([[[1.0], [3.0]]])
    log_density = torch.tensor([[0.0], [math.log(2.0)]])
    penalty = cql_penalty(q_sampled, log_density, torch.tensor([[2.0]]), temperature=1.0)
    assert_close(penalty, torch.tensor([math.log(math.exp(1.0) + math.exp(3.0) / 2) - 2.0]))
    # at temperature T: T log sum exp((Q - log mu) / T)
    penalty = cql_penalty(q_sampled, log_density, torch.tensor([[2.0]]), temperature=2.0)
    lse = 2.0 * math.log(math.exp(0.5) + math.exp((3.0 - math.log(2.0)) / 2))
    assert_close(penalty, torch.tensor([lse - 2.0]))


def test_the_cql_penalty_averages_over_the_batch_per_critic():
    q_sampled = torch.zeros(2, 3, 4)  # two critics, three proposals, four states
    q_data = torch.tensor([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    penalty = cql_penalty(q_sampled, torch.zeros(3, 4), q_data, temperature=1.0)
    assert_close(penalty, torch.tensor([math.log(3.0) - 1.5, math.log(3.0) - 1.0]))


def test_the_discrete_cql_penalty_is_the_log_sum_exp_of_the_allowed_actions_less_the_data_value():
    q = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    action = torch.tensor([0, 1])
    both = (math.log(math.e + math.e ** 2 + math.e ** 3) - 1.0 + math.log(2 + math.e ** 5) - 0.0) / 2
    assert float(discrete_cql_penalty(q, action)) == pytest.approx(both)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])  # the second state may not take action 2
    assert float(discrete_cql_penalty(q, action, mask)) == pytest.approx(
        (math.log(math.e + math.e ** 2 + math.e ** 3) - 1.0 + math.log(2.0)) / 2)
