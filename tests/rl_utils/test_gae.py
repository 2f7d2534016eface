"""GAE: bootstrap unless terminated, cut the lambda-recursion at every episode end."""
import pytest
import torch
from torch.testing import assert_close

from tidal.rl_utils import gae, td_target

F, T = False, True


def two_env_rollout():
    """4 steps x 2 envs with the same rewards and values; env 0 terminates at step 1, env 1 is
    truncated there (the time limit ended it in a state worth V = 4)."""
    reward = torch.tensor([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [1.0, 1.0]])
    value = torch.tensor([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0]])
    # next_value[t] = V(s_{t+1}): V_{t+1} inside an episode; at step 1 env 0's 100 must be ignored
    # (terminated) and env 1's 4 is V(final observation); the last row is V(obs after the rollout)
    next_value = torch.tensor([[1.0, 1.0], [100.0, 4.0], [2.0, 2.0], [4.0, 4.0]])
    terminated = torch.tensor([[F, F], [T, F], [F, F], [F, F]])
    done = torch.tensor([[F, F], [T, T], [F, F], [F, F]])
    return reward, value, next_value, terminated, done


def test_truncated_step_bootstraps_and_terminated_does_not_and_neither_carries_over():
    advantage, returns = gae(*two_env_rollout(), gamma=0.5, lam=0.5)  # gamma * lam = 0.25
    # delta_t = r_t + 0.5 (1 - terminated_t) next_value_t - V_t
    #   env 0: d0 = 1 + 0.5*1 - 1 = 0.5   d1 = 2 + 0 - 1 = 1 (terminated)   d2 = 0 + 0.5*2 - 2 = -1
    #          d3 = 1 + 0.5*4 - 2 = 1
    #   env 1: d0 = 0.5   d1 = 2 + 0.5*4 - 1 = 3 (truncated: bootstraps from V(final obs))   d2 = -1   d3 = 1
    # A_t = d_t + 0.25 (1 - done_t) A_{t+1}
    #   env 0: A3 = 1   A2 = -1 + 0.25*1 = -0.75   A1 = 1 (done: A2 not carried)   A0 = 0.5 + 0.25*1 = 0.75
    #   env 1: A3 = 1   A2 = -0.75   A1 = 3 (done: A2 not carried)   A0 = 0.5 + 0.25*3 = 1.25
    assert_close(advantage, torch.tensor([[0.75, 1.25], [1.0, 3.0], [-0.75, -0.75], [1.0, 1.0]]))
    # returns = A + V: env 0: 0.75+1, 1+1, -0.75+2, 1+2; env 1: 1.25+1, 3+1, -0.75+2, 1+2
    assert_close(returns, torch.tensor([[1.75, 2.25], [2.0, 4.0], [1.25, 1.25], [3.0, 3.0]]))


def test_next_value_at_a_terminated_step_is_ignored_even_if_not_finite():
    reward, value, next_value, terminated, done = two_env_rollout()
    next_value[1, 0] = float('nan')
    advantage, returns = gae(reward, value, next_value, terminated, done, gamma=0.5, lam=0.5)
    assert torch.isfinite(advantage).all() and torch.isfinite(returns).all()
    assert advantage[:, 0].tolist() == pytest.approx([0.75, 1.0, -0.75, 1.0])


def test_lam_one_gives_discounted_returns_bootstrapped_from_the_last_value():
    reward = torch.tensor([[1.0], [2.0], [4.0]])
    value = torch.tensor([[3.0], [-1.0], [2.0]])  # any values: they cancel when lam = 1
    next_value = torch.tensor([[-1.0], [2.0], [8.0]])
    no_end = torch.zeros(3, 1, dtype=torch.bool)
    advantage, returns = gae(reward, value, next_value, no_end, no_end, gamma=0.5, lam=1.0)
    # G2 = 4 + 0.5*8 = 8   G1 = 2 + 0.5*8 = 6   G0 = 1 + 0.5*6 = 4
    assert_close(returns, torch.tensor([[4.0], [6.0], [8.0]]))
    # A = G - V = 4-3, 6+1, 8-2
    assert_close(advantage, torch.tensor([[1.0], [7.0], [6.0]]))


def test_lam_zero_gives_one_step_td():
    reward, value, next_value, terminated, done = two_env_rollout()
    advantage, returns = gae(reward, value, next_value, terminated, done, gamma=0.5, lam=0.0)
    # A = delta from the first test; returns = r + 0.5 (1 - terminated) next_value
    assert_close(advantage, torch.tensor([[0.5, 0.5], [1.0, 3.0], [-1.0, -1.0], [1.0, 1.0]]))
    assert_close(returns, td_target(reward, next_value, terminated, 0.5))


def test_result_is_float32_for_float64_inputs():
    reward, value, next_value, terminated, done = (x.double() if x.is_floating_point() else x
                                                   for x in two_env_rollout())
    advantage, returns = gae(reward, value, next_value, terminated, done, gamma=0.5, lam=0.5)
    assert advantage.dtype == returns.dtype == torch.float32
    assert advantage.shape == returns.shape == (4, 2)


@pytest.mark.gpu
def test_cuda_matches_cpu():
    rollout = two_env_rollout()
    advantage, returns = gae(*(x.cuda() for x in rollout), gamma=0.5, lam=0.5)
    assert advantage.is_cuda
    assert_close(advantage.cpu(), gae(*rollout, gamma=0.5, lam=0.5)[0])


def test_advantages_and_returns_carry_no_gradient():
    reward, value, next_value, terminated, done = two_env_rollout()
    advantage, returns = gae(reward, value.requires_grad_(), next_value, terminated, done, gamma=0.5, lam=0.5)
    assert not advantage.requires_grad and not returns.requires_grad
