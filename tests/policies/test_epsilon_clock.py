import math

import pytest
import torch

from tidal.policies.common import EpsilonClock


def test_epsilon_clock_counts_env_steps_and_round_trips_its_state():
    schedule = {'type': 'exp', 'start': 1.0, 'end': 0.0, 'decay': 10}
    clock = EpsilonClock(schedule)
    clock.tick(4)
    clock.tick(3)
    assert clock.env_step == 7 and clock.epsilon() == pytest.approx(math.exp(-0.7))
    state = clock.state_dict()
    assert torch.equal(state['env_step'], torch.tensor(7))
    resumed = EpsilonClock(schedule)
    resumed.load_state_dict(state)
    assert resumed.epsilon() == clock.epsilon()
    resumed.load_state_dict({})  # a collect state written without the clock starts the schedule over
    assert resumed.env_step == 0 and resumed.epsilon() == 1.0


def test_epsilon_clock_without_a_schedule_type_never_explores():
    clock = EpsilonClock({'type': None, 'start': 1.0, 'end': 1.0, 'decay': 1})
    clock.tick(100)
    assert clock.epsilon() == 0.0
