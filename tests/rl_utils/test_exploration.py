import pytest

from tidal.rl_utils import epsilon_at


def test_linear_epsilon_falls_to_end_at_decay_and_stays():
    schedule = {'type': 'linear', 'start': 1.0, 'end': 0.1, 'decay': 100}
    assert epsilon_at(0, schedule) == 1.0
    assert epsilon_at(50, schedule) == pytest.approx(0.55)
    assert epsilon_at(100, schedule) == epsilon_at(1000, schedule) == pytest.approx(0.1)


def test_unknown_schedule_type_names_the_key():
    with pytest.raises(ValueError, match=r"policy.other.eps.type must be 'linear', 'exp' or None, got 'step'"):
        epsilon_at(0, {'type': 'step', 'start': 1.0, 'end': 0.1, 'decay': 10})
