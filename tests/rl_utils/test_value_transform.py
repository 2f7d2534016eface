"""MuZero's squashing h, its inverse, the two-hot support and the dynamic horizon, by hand."""
import pytest
import torch

from tidal.rl_utils.horizon import linear_td_steps
from tidal.rl_utils.value_transform import (from_support, scale_value, support_to_value, to_support, unscale_value,
                                            value_to_support)


def test_scale_value_by_hand():
    x = torch.tensor([0.0, 3.0, -8.0, 99.0], dtype=torch.float64)
    # h(3) = (sqrt(4) - 1) + 0.003; h(-8) = -(sqrt(9) - 1) - 0.008; h(99) = (sqrt(100) - 1) + 0.099
    expected = torch.tensor([0.0, 1.003, -2.008, 9.099], dtype=torch.float64)
    assert torch.allclose(scale_value(x), expected, atol=1e-12)


def test_unscale_inverts_scale_over_many_magnitudes():
    x = torch.tensor([-1e5, -1234.5, -10.0, -1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 42.0, 1e4, 1e5], dtype=torch.float64)
    assert torch.allclose(unscale_value(scale_value(x)), x, rtol=1e-9, atol=1e-9)
    y = torch.linspace(-300.0, 300.0, 101, dtype=torch.float64)
    assert torch.allclose(scale_value(unscale_value(y)), y, rtol=1e-9, atol=1e-9)


def test_two_hot_splits_mass_between_the_neighbouring_integers():
    probs = to_support(torch.tensor([2.3, -0.25, 5.0, -5.0]), size=5)
    assert probs.shape == (4, 11)
    assert probs[0, 5 + 2] == pytest.approx(0.7) and probs[0, 5 + 3] == pytest.approx(0.3)
    assert probs[1, 5 - 1] == pytest.approx(0.25) and probs[1, 5 + 0] == pytest.approx(0.75)
    assert probs[2, 10] == pytest.approx(1.0) and probs[3, 0] == pytest.approx(1.0)  # the support's ends
    assert torch.allclose(probs.sum(dim=-1), torch.ones(4))
    assert (probs >= 0).all()


def test_two_hot_round_trip_and_clamping():
    y = torch.linspace(-7.5, 7.5, 61)
    assert torch.allclose(from_support(to_support(y, 10), 10), y, atol=1e-6)
    assert torch.allclose(from_support(to_support(torch.tensor([30.0, -30.0]), 10), 10), torch.tensor([10.0, -10.0]))


def test_value_round_trip_through_support_logits():
    x = torch.tensor([-250.0, -3.0, 0.0, 0.7, 18.0, 400.0], dtype=torch.float64)
    logits = value_to_support(x, size=300).clamp(min=1e-30).log()  # logits whose softmax is the two-hot
    assert torch.allclose(support_to_value(logits, size=300), x, rtol=1e-6, atol=1e-6)


def test_uniform_support_logits_give_a_value_of_zero_in_float32():
    # the mean of a uniform support is 0 and h^-1(0) = 0; the unrationalised root gave 2.6e-5 in float32
    values = support_to_value(torch.zeros(3, 601), size=300)
    assert values.dtype == torch.float32 and values.abs().max().item() < 1e-6
    assert unscale_value(torch.tensor([0.0])).item() == 0.0
    x = torch.tensor([-250.0, -3.0, -0.01, 0.0, 0.01, 0.7, 18.0])  # float32 round trip still holds
    assert torch.allclose(unscale_value(scale_value(x)), x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('age, steps', [(0.0, 5), (0.5, 3), (0.6, 3), (1.0, 1), (2.0, 1)])
def test_linear_td_steps_at_the_start_middle_and_past_the_max_age(age, steps):
    # 1 + (5 - 1) * (1 - age / 1): 5 at 0; 3 at 0.5; ceil(2.6) = 3 at 0.6; 1 from 1.0 on
    assert linear_td_steps(torch.tensor([age]), max_td_steps=5, max_bootstrap_age=1.0).item() == steps
