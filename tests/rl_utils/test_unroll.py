"""Unrolled value targets, the recurrent gradient scaling and the dynamic horizon, against hand-computed numbers."""
import pytest
import torch

from tidal.rl_utils.horizon import linear_td_steps
from tidal.rl_utils.unroll import scale_gradient, unrolled_value_targets

GAMMA = 0.9


def test_n_step_targets_bootstrap_from_the_value_n_steps_ahead():
    reward = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]])
    value = torch.tensor([[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]])
    td = torch.full((1, 3), 2)
    target = unrolled_value_targets(reward, value, torch.tensor([5]), td, GAMMA, num_states=3)
    expected = [1 + GAMMA * 2 + GAMMA**2 * 30, 2 + GAMMA * 3 + GAMMA**2 * 40, 3 + GAMMA * 4 + GAMMA**2 * 50]
    torch.testing.assert_close(target, torch.tensor([expected]))


def test_targets_stop_at_the_end_state_and_stay_there_beyond_it():
    # the window ends at state 2 (e.g. the terminal state, value 0): state 1 looks one step ahead, states
    # 2 and 3 are the end state's value
    reward = torch.tensor([[1.0, 2.0, 99.0, 99.0]])
    value = torch.tensor([[10.0, 20.0, 0.0, 77.0, 77.0]])
    target = unrolled_value_targets(reward, value, torch.tensor([2]), torch.full((1, 4), 3), GAMMA, num_states=4)
    torch.testing.assert_close(target, torch.tensor([[1 + GAMMA * 2, 2.0, 0.0, 0.0]]))


def test_negative_td_steps_give_the_monte_carlo_return_to_the_end_state():
    reward = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    value = torch.tensor([[5.0, 5.0, 5.0, 7.0, 0.0]])  # the end state (3) bootstraps 7 (a truncation)
    target = unrolled_value_targets(reward, value, torch.tensor([3]), torch.full((1, 2), -1), GAMMA, num_states=2)
    torch.testing.assert_close(target, torch.tensor([[1 + GAMMA + GAMMA**2 + GAMMA**3 * 7, 1 + GAMMA + GAMMA**2 * 7]]))


def test_td_steps_may_differ_per_state():
    reward = torch.ones(1, 4)
    value = torch.tensor([[0.0, 0.0, 10.0, 10.0, 10.0]])
    td = torch.tensor([[1, 2]])
    target = unrolled_value_targets(reward, value, torch.tensor([4]), td, GAMMA, num_states=2)
    torch.testing.assert_close(target, torch.tensor([[1.0, 1 + GAMMA + GAMMA**2 * 10]]))


def test_value_width_is_checked():
    with pytest.raises(ValueError, match=r'value must be \[B, W \+ 1\]'):
        unrolled_value_targets(torch.ones(1, 3), torch.ones(1, 3), torch.tensor([2]), torch.ones(1, 1, dtype=torch.long),
                               GAMMA, num_states=1)


def test_scale_gradient_keeps_the_value_and_scales_the_gradient():
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    y = scale_gradient(x * 3.0, 0.5)
    torch.testing.assert_close(y, torch.tensor([4.5, -6.0]))
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([1.5, 1.5]))


@pytest.mark.parametrize('age, expected', [(0, 5), (50, 3), (100, 1), (250, 1)])
def test_linear_td_steps_at_age_zero_half_and_past_the_maximum(age, expected):
    # 1 + 4 * (1 - 50 / 100) = 3; at and past max_bootstrap_age the minimum, 1
    n = linear_td_steps(torch.tensor([age]), max_td_steps=5, max_bootstrap_age=100)
    assert n.dtype == torch.long and n.tolist() == [expected]


def test_linear_td_steps_rounds_up():
    assert linear_td_steps(torch.tensor([10.0]), max_td_steps=5, max_bootstrap_age=100).tolist() == [5]  # 4.6
