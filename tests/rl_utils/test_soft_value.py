"""The soft state value of soft Q-learning: alpha logsumexp(Q / alpha) over the allowed actions, and its form under
another network's Boltzmann policy (double soft Q)."""
import math

import pytest
import torch

from tidal.rl_utils.td import soft_state_value


def test_the_soft_value_is_alpha_logsumexp_of_q_over_alpha():
    q = torch.tensor([[2.0, 3.0], [0.0, 0.0]])
    value = soft_state_value(q, 0.5)
    # 0.5 log(e^4 + e^6) = 3 + 0.5 log(1 + e^-2); two equal values add alpha log 2
    assert value.tolist() == pytest.approx([3 + 0.5 * math.log(1 + math.exp(-2)), 0.5 * math.log(2)])


def test_the_soft_value_tends_to_the_max_as_alpha_falls():
    q = torch.tensor([[2.0, 3.0, -1.0]])
    assert soft_state_value(q, 1e-3).item() == pytest.approx(3.0, abs=1e-6)


def test_disallowed_actions_add_nothing():
    q = torch.tensor([[2.0, 3.0], [2.0, 3.0]])
    mask = torch.tensor([[0, 1], [1, 0]])
    assert soft_state_value(q, 0.5, mask).tolist() == [3.0, 2.0]  # one allowed action: its own value


def test_large_values_stay_finite():
    q = torch.tensor([[1e4, 1e4 - 1.0]])
    assert soft_state_value(q, 0.01).item() == pytest.approx(1e4, abs=1e-6)


def test_the_value_under_another_networks_policy_weighs_q_by_its_softmax():
    q = torch.tensor([[2.0, 3.0]])
    policy_q = torch.tensor([[1.0, -1.0]])
    # pi = softmax([1, -1]) = [e, e^-1] / (e + e^-1); V = sum pi (q - log pi) at alpha 1
    pi = [math.e / (math.e + 1 / math.e), (1 / math.e) / (math.e + 1 / math.e)]
    expected = pi[0] * (2 - math.log(pi[0])) + pi[1] * (3 - math.log(pi[1]))
    assert soft_state_value(q, 1.0, policy_q=policy_q).item() == pytest.approx(expected, rel=1e-6)


def test_under_its_own_policy_the_value_is_the_logsumexp_and_masks_hold():
    q = torch.tensor([[2.0, 3.0, 0.5], [-1.0, 4.0, 1.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.allclose(soft_state_value(q, 0.3, mask, policy_q=q), soft_state_value(q, 0.3, mask), atol=1e-5)
    masked_out = soft_state_value(q, 0.3, mask, policy_q=torch.tensor([[0.0, 0.0, 100.0], [0.0, 0.0, 0.0]]))
    assert masked_out[0].item() == pytest.approx(0.5 * (2 + 3) + 0.3 * math.log(2), rel=1e-6)  # pi = [1/2, 1/2, 0]
