import math

import pytest
import torch

from tidal.rl_utils import gather_action, q_1step_td_error, td_target, v_1step_td_error


def test_td_target_bootstraps_unless_terminated():
    reward = torch.tensor([1.0, 2.0])
    next_value = torch.tensor([10.0, 10.0])
    terminated = torch.tensor([False, True])
    assert td_target(reward, next_value, terminated, 0.9).tolist() == pytest.approx([10.0, 2.0])


def test_v_1step_td_error_matches_hand_computed_numbers():
    value = torch.tensor([0.5, 1.0, -1.0])
    next_value = torch.tensor([2.0, 3.0, 4.0])
    reward = torch.tensor([1.0, 0.0, 1.0])
    terminated = torch.tensor([0.0, 0.0, 1.0])
    loss, td = v_1step_td_error(value, next_value, reward, terminated, gamma=0.5)
    # targets: 1 + 0.5*2 = 2, 0 + 0.5*3 = 1.5, 1 (terminated)
    assert td.tolist() == pytest.approx([1.5, 0.5, 2.0])
    assert loss.item() == pytest.approx((1.5**2 + 0.5**2 + 2.0**2) / 3)


def test_importance_weights_scale_each_squared_error():
    value = torch.tensor([0.0, 0.0])
    loss, td = v_1step_td_error(value, torch.zeros(2), torch.tensor([1.0, 2.0]), torch.zeros(2), 0.99,
                                weight=torch.tensor([0.5, 0.25]))
    assert loss.item() == pytest.approx((0.5 * 1 + 0.25 * 4) / 2)
    assert td.tolist() == pytest.approx([1.0, 2.0])


def test_ensemble_values_give_one_loss_per_critic():
    value = torch.tensor([[0.0, 0.0], [1.0, 1.0]])  # [E=2, B=2]
    loss, td = v_1step_td_error(value, torch.zeros(2), torch.tensor([1.0, 1.0]), torch.ones(2), 0.9)
    assert loss.tolist() == pytest.approx([1.0, 0.0])
    assert td.shape == (2, 2)


def test_td_error_does_not_backpropagate_into_the_target():
    next_value = torch.tensor([1.0], requires_grad=True)
    value = torch.tensor([0.0], requires_grad=True)
    loss, _ = v_1step_td_error(value, next_value, torch.tensor([0.0]), torch.tensor([0.0]), 1.0)
    loss.backward()
    assert next_value.grad is None
    assert value.grad.item() == pytest.approx(-2.0)


def test_gather_action_picks_taken_action_for_every_ensemble_member():
    q = torch.arange(12.0).reshape(2, 3, 2)  # [E=2, B=3, A=2]
    assert gather_action(q, torch.tensor([1, 0, 1])).tolist() == [[1.0, 2.0, 5.0], [7.0, 8.0, 11.0]]


def test_q_1step_td_error_uses_next_action_of_target():
    q = torch.tensor([[1.0, 2.0]])
    next_q = torch.tensor([[10.0, 20.0]])
    loss, td = q_1step_td_error(q, next_q, torch.tensor([0]), torch.tensor([1]), torch.tensor([1.0]),
                                torch.tensor([0.0]), gamma=0.5)
    assert td.item() == pytest.approx(1.0 + 0.5 * 20.0 - 1.0)
    assert loss.item() == pytest.approx(10.0**2)
    assert not math.isnan(loss.item())
