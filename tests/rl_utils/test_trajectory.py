"""Trajectory families of the TAAC policies, the switch logits and the stored step types."""
import math

import pytest
import torch
from torch.testing import assert_close

from tidal.rl_utils import StepType, step_type
from tidal.rl_utils.trajectory import (ConstantTrajectory, LinearTrajectory, QuadraticTrajectory, select_trajectory,
                                       switch_logits)


def tau(*components):
    """One trajectory [B=1, K, A=1] from its components (action, velocity, ...)."""
    return torch.tensor(components, dtype=torch.float32).reshape(1, len(components), 1)


def action(value):
    return torch.tensor([[value]], dtype=torch.float32)


# ----- constant (TAAC) ---------------------------------------------------------------------------

def test_constant_advance_returns_the_trajectory_unchanged():
    previous = torch.tensor([[[0.3, -0.7]], [[1.0, 0.0]]])  # [B=2, K=1, A=2]
    assert torch.equal(ConstantTrajectory().advance(previous), previous)


def test_constant_from_action_is_the_action_with_a_trajectory_axis():
    new_action = torch.tensor([[0.3, -0.7], [0.5, 0.25]])
    new = ConstantTrajectory().from_action(new_action, torch.zeros(2, 1, 2))
    assert new.shape == (2, 1, 2)
    assert torch.equal(new[:, 0], new_action)


# ----- linear (TaacL) ----------------------------------------------------------------------------

def test_linear_advance_moves_the_action_by_twice_the_slope():
    # a' = 0.5 + 2 * 0.1 = 0.7, v unchanged
    assert_close(LinearTrajectory().advance(tau(0.5, 0.1)), tau(0.7, 0.1))


@pytest.mark.parametrize('start, expected', [
    ((0.9, 0.2), (1.0, 0.2)),  # 0.9 + 0.4 = 1.3, clamped to 1; the slope is kept
    ((-0.9, -0.2), (-1.0, -0.2)),  # -0.9 - 0.4 = -1.3, clamped to -1
])
def test_linear_advance_clamps_the_action_but_keeps_the_slope(start, expected):
    assert_close(LinearTrajectory().advance(tau(*start)), tau(*expected))


def test_linear_inverse_mode_starts_at_the_action_with_the_slope_that_reaches_it():
    # v = (0.6 - 0.2) / 2 = 0.2
    new = LinearTrajectory(inverse_mode=True).from_action(action(0.6), tau(0.2, -0.5))
    assert_close(new, tau(0.6, 0.2))


def test_linear_non_inverse_mode_takes_the_action_as_slope_and_steps_once():
    # v = 0.3, a' = 0.2 + 2 * 0.3 = 0.8; the old slope -0.5 is dropped
    new = LinearTrajectory(inverse_mode=False).from_action(action(0.3), tau(0.2, -0.5))
    assert_close(new, tau(0.8, 0.3))


def test_linear_non_inverse_mode_clamps_the_first_step():
    # a' = 0.5 + 2 * 0.5 = 1.5 -> 1.0, v = 0.5
    new = LinearTrajectory(inverse_mode=False).from_action(action(0.5), tau(0.5, 0.0))
    assert_close(new, tau(1.0, 0.5))


# ----- quadratic (TaacQ) -------------------------------------------------------------------------

def test_quadratic_advance_updates_velocity_first_then_action():
    # v' = 0.1 + 2 * 0.05 = 0.2, a' = 0 + 2 * 0.2 = 0.4, u unchanged
    assert_close(QuadraticTrajectory().advance(tau(0.0, 0.1, 0.05)), tau(0.4, 0.2, 0.05))


@pytest.mark.parametrize('start, expected', [
    ((-1.0, 0.8, 0.25), (1.0, 1.0, 0.25)),  # v' = 0.8 + 0.5 = 1.3 -> 1.0, a' = -1 + 2 * 1.0 = 1.0
    ((1.0, -0.8, -0.25), (-1.0, -1.0, -0.25)),  # v' = -1.3 -> -1.0, a' = 1 - 2 = -1.0
    ((0.5, 0.2, 0.05), (1.0, 0.3, 0.05)),  # v' = 0.3, a' = 0.5 + 0.6 = 1.1 -> 1.0
    ((-0.5, -0.2, -0.05), (-1.0, -0.3, -0.05)),  # v' = -0.3, a' = -1.1 -> -1.0
])
def test_quadratic_advance_clamps_velocity_and_action(start, expected):
    assert_close(QuadraticTrajectory().advance(tau(*start)), tau(*expected))


def test_quadratic_inverse_mode_infers_velocity_and_curvature_from_the_action():
    # v = (0.6 - 0.2) / 2 = 0.2, u = v / 2 = 0.1; the old v and u play no part
    new = QuadraticTrajectory(inverse_mode=True).from_action(action(0.6), tau(0.2, 0.7, -0.3))
    assert_close(new, tau(0.6, 0.2, 0.1))


def test_quadratic_inverse_mode_equals_one_step_from_rest_with_that_curvature():
    # from (a, 0, u): v' = 2u, a' = a + 4u, so the action x is reached with u = (x - a) / 4
    start = torch.tensor([[[0.2, -0.1], [0.7, 0.9], [-0.3, 0.0]]])  # [B=1, K=3, A=2]
    new_action = torch.tensor([[0.6, -0.5]])
    at_rest = torch.stack([start[:, 0], torch.zeros(1, 2), (new_action - start[:, 0]) / 4], dim=1)
    assert_close(QuadraticTrajectory(inverse_mode=True).from_action(new_action, start),
                 QuadraticTrajectory().advance(at_rest))


def test_quadratic_non_inverse_mode_takes_the_action_as_curvature_from_rest():
    # u = 0.1, v = 0 + 2 * 0.1 = 0.2, a' = 0.2 + 2 * 0.2 = 0.6; the old v = 0.7 is reset
    new = QuadraticTrajectory(inverse_mode=False).from_action(action(0.1), tau(0.2, 0.7, -0.3))
    assert_close(new, tau(0.6, 0.2, 0.1))


# ----- all families ------------------------------------------------------------------------------

@pytest.mark.parametrize('trajectory, start, grad', [
    (ConstantTrajectory(), (0.1, ), 1.0),  # sum = x
    (LinearTrajectory(True), (0.1, 0.0), 1.5),  # sum = x + (x - a) / 2
    (LinearTrajectory(False), (0.1, 0.0), 3.0),  # sum = (a + 2x) + x
    (QuadraticTrajectory(True), (0.1, 0.0, 0.0), 1.75),  # sum = x + (x - a) / 2 + (x - a) / 4
    (QuadraticTrajectory(False), (0.1, 0.0, 0.0), 7.0),  # sum = (a + 4x) + 2x + x
])
def test_from_action_passes_the_gradient_to_the_action(trajectory, start, grad):
    new_action = action(0.1).requires_grad_(True)
    trajectory.from_action(new_action, tau(*start)).sum().backward()
    assert new_action.grad.item() == pytest.approx(grad)


@pytest.mark.parametrize('trajectory', [ConstantTrajectory(), LinearTrajectory(), QuadraticTrajectory()])
def test_zeros_have_the_family_size(trajectory):
    zeros = trajectory.zeros(4, 3)
    assert zeros.shape == (4, trajectory.size, 3) and not zeros.any()


def test_select_trajectory_takes_the_new_one_only_where_switched():
    new, kept = torch.ones(3, 2, 1), -torch.ones(3, 2, 1)
    chosen = select_trajectory(torch.tensor([True, False, True]), new, kept)
    assert chosen[:, 0, 0].tolist() == [1.0, -1.0, 1.0]
    assert chosen[:, 1, 0].tolist() == [1.0, -1.0, 1.0]


# ----- switch logits -----------------------------------------------------------------------------

def test_switch_logits_give_the_softmax_of_q_over_alpha():
    logits = switch_logits(torch.tensor([1.0]), torch.tensor([2.0]), 0.5)
    # softmax([1, 2] / 0.5) = softmax([2, 4]): p_new = 1 / (1 + exp(-2))
    p_new = 1.0 / (1.0 + math.exp(-2.0))
    assert_close(logits.softmax(-1), torch.tensor([[1.0 - p_new, p_new]]))


def test_switch_logits_shift_the_larger_logit_to_exactly_zero():
    logits = switch_logits(torch.tensor([1.0, 5.0]), torch.tensor([2.0, 3.0]), torch.tensor(0.5))
    # row 0: [0, 1] / 0.5 - 2 = [-2, 0]; row 1: [0, -2] / 0.5 = [0, -4]
    assert logits.tolist() == [[-2.0, 0.0], [0.0, -4.0]]


def test_switch_logits_stay_finite_for_huge_q_and_tiny_alpha():
    q_keep = torch.tensor([1e6, -1e6, 1e6])
    q_new = torch.tensor([1e6 + 1.0, 1e6, -1e6])
    probs = switch_logits(q_keep, q_new, 1e-3).softmax(-1)
    assert torch.isfinite(probs).all()
    assert_close(probs.sum(-1), torch.ones(3))
    assert probs[:, 1].tolist() == [1.0, 1.0, 0.0]  # advantages 1000, 2e9, -2e9 in units of alpha


def test_switch_logits_clip_the_advantage_before_the_temperature():
    # q_new - q_keep = 3, clamped to 0.5: p_new = 1 / (1 + exp(-0.5)); -3 is clamped to -0.5
    logits = switch_logits(torch.tensor([0.0, 3.0]), torch.tensor([3.0, 0.0]), 1.0, advantage_clip=(-0.5, 0.5))
    p = 1.0 / (1.0 + math.exp(-0.5))
    assert_close(logits.softmax(-1), torch.tensor([[1.0 - p, p], [p, 1.0 - p]]))


def test_switch_logits_treat_zero_alpha_as_a_hard_choice():
    probs = switch_logits(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0]), 0.0).softmax(-1)
    assert probs.tolist() == [[0.0, 1.0], [1.0, 0.0]]


# ----- step types --------------------------------------------------------------------------------

def test_step_type_marks_first_last_and_mid_steps_as_int8():
    first = torch.tensor([True, True, False, False])
    done = torch.tensor([True, False, True, False])
    kinds = step_type(first, done)
    assert kinds.dtype == torch.int8
    # a one-step episode is FIRST (its end stays readable from terminated / truncated)
    assert kinds.tolist() == [StepType.FIRST, StepType.FIRST, StepType.LAST, StepType.MID]
    assert [int(k) for k in StepType] == [0, 1, 2]
