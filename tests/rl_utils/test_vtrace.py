"""V-trace: GAE's TD(1) returns on-policy, and hand-computed targets with clipped ratios off-policy."""
import math

import torch
from torch.testing import assert_close

from tidal.rl_utils import gae, vtrace

F, T = False, True


def test_on_policy_with_unit_lambda_and_c_clip_equals_gae_returns():
    generator = torch.Generator().manual_seed(0)
    reward, value, next_value = (torch.randn(6, 3, generator=generator) for _ in range(3))
    terminated = torch.zeros(6, 3, dtype=torch.bool)
    terminated[2, 0] = True
    done = terminated.clone()
    done[3, 1] = True  # a truncation
    # inside an episode the next value is the next row's value
    next_value[:-1] = torch.where(done[:-1], next_value[:-1], value[1:])
    advantage, returns = gae(reward, value, next_value, terminated, done, gamma=0.9, lam=1.0)
    target, pg_advantage = vtrace(reward, value, next_value, torch.zeros(6, 3), terminated, done, gamma=0.9,
                                  lam=1.0, rho_clip=1.0, c_clip=1.0)
    assert_close(target, returns)
    assert_close(pg_advantage, advantage)  # r_s + gamma v_{s+1} - V(x_s) is the TD(1) advantage


def test_hand_computed_targets_with_termination_truncation_and_clipped_ratios():
    # 3 steps x 2 envs; env 0 terminates at step 1, env 1 is truncated at step 0 (its final obs is worth 4)
    reward = torch.tensor([[1.0, 2.0], [3.0, 0.0], [0.0, 1.0]])
    value = torch.tensor([[1.0, 1.0], [2.0, 2.0], [1.0, 2.0]])
    # next_value: env 0: V(x_1) = 2, 100 ignored (terminated), 3 past the rollout; env 1: 4 (truncated), V(x_2) = 2, 1
    next_value = torch.tensor([[2.0, 4.0], [100.0, 2.0], [3.0, 1.0]])
    terminated = torch.tensor([[F, F], [T, F], [F, F]])
    done = torch.tensor([[F, T], [T, F], [F, F]])
    ratio = torch.tensor([[2.0, 0.5], [0.5, 1.0], [1.0, 4.0]])  # pi / mu
    target, pg_advantage = vtrace(reward, value, next_value, ratio.log(), terminated, done, gamma=0.5, lam=0.5,
                                  rho_clip=1.0, c_clip=0.8)
    # rho = min(1, ratio) = [[1, .5], [.5, 1], [1, 1]];  c = 0.5 min(0.8, ratio) = [[.4, .25], [.25, .4], [.4, .4]]
    # delta_s = rho_s (r_s + 0.5 (1 - terminated_s) next_value_s - V_s)
    # corr_s = v_s - V_s = delta_s + 0.5 c_s (1 - done_s) corr_{s+1}
    #   env 0: d2 = 1 (0 + 1.5 - 1) = 0.5          corr2 = 0.5                       v2 = 1.5
    #          d1 = .5 (3 + 0 - 2) = 0.5 (term.)   corr1 = 0.5 (done)                v1 = 2.5
    #          d0 = 1 (1 + 1 - 1) = 1              corr0 = 1 + 0.5*.4*0.5 = 1.1      v0 = 2.1
    #   env 1: d2 = 1 (1 + 0.5 - 2) = -0.5         corr2 = -0.5                      v2 = 1.5
    #          d1 = 1 (0 + 1 - 2) = -1             corr1 = -1 + 0.5*.4*-0.5 = -1.1   v1 = 0.9
    #          d0 = .5 (2 + 2 - 1) = 1.5 (trunc.)  corr0 = 1.5 (done)                v0 = 2.5
    assert_close(target, torch.tensor([[2.1, 2.5], [2.5, 0.9], [1.5, 1.5]]))
    # advantage_s = rho_s (r_s + 0.5 (1 - terminated_s) v_{s+1} - V_s), v_{s+1} = next_value_s where the episode or
    # the rollout ends
    #   env 0: s2: 1 (0 + 0.5*3 - 1) = 0.5   s1: .5 (3 + 0 - 2) = 0.5   s0: 1 (1 + 0.5*2.5 - 1) = 1.25
    #   env 1: s2: 1 (1 + 0.5*1 - 2) = -0.5   s1: 1 (0 + 0.5*1.5 - 2) = -1.25   s0: .5 (2 + 0.5*4 - 1) = 1.5
    assert_close(pg_advantage, torch.tensor([[1.25, 1.5], [0.5, -1.25], [0.5, -0.5]]))


def test_an_overflowing_ratio_clips_to_rho_bar_and_a_terminated_next_value_never_leaks():
    reward, value = torch.tensor([[1.0]]), torch.tensor([[0.5]])
    next_value = torch.tensor([[math.nan]])
    target, pg_advantage = vtrace(reward, value, next_value, torch.tensor([[1000.0]]), torch.tensor([[T]]),
                                  torch.tensor([[T]]), gamma=0.9, lam=1.0, rho_clip=2.0, c_clip=1.0)
    assert_close(target, torch.tensor([[1.5]]))  # 0.5 + 2 * (1 - 0.5)
    assert_close(pg_advantage, torch.tensor([[1.0]]))
