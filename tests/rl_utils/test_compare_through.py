"""The compare-through return of TAAC: follow rewards until the first cut, then bootstrap."""
import torch
from torch.testing import assert_close

from tidal.rl_utils import compare_through_return


def row(*values, dtype=torch.float32):
    return torch.tensor([values], dtype=dtype)


def test_switch_cut_and_terminated_step_give_hand_computed_returns():
    gamma = 0.9
    reward = row(1.0, 2.0, 3.0, 4.0, 5.0)
    value = row(10.0, 20.0, 30.0, 40.0, 50.0)  # V_t: value of the state step t leads to
    # step 1 is cut (a switch at step 2); step 3 terminates (discount 0, cut as every episode end);
    # step 4 opens the next episode and is the last of the sequence
    cut = row(False, True, False, True, False, dtype=torch.bool)
    discount = row(gamma, gamma, gamma, 0.0, gamma)
    # G_4 = 5 + 0.9 * V_4 = 5 + 45 = 50          (the last step always bootstraps)
    # G_3 = 4 + 0 * V_3 = 4                        (terminated: nothing follows)
    # G_2 = 3 + 0.9 * G_3 = 3 + 3.6 = 6.6          (no cut: follow the next return)
    # G_1 = 2 + 0.9 * V_1 = 2 + 18 = 20            (cut: bootstrap, G_2 is ignored)
    # G_0 = 1 + 0.9 * G_1 = 1 + 18 = 19
    returns = compare_through_return(reward, value, discount, cut)
    assert_close(returns, row(19.0, 20.0, 6.6, 4.0, 50.0))


def test_without_cuts_it_is_the_discounted_sum_bootstrapped_from_the_last_value():
    reward = row(1.0, 1.0, 1.0)
    value = row(100.0, 200.0, 10.0)  # only V_2 is used
    cut = torch.zeros(1, 3, dtype=torch.bool)
    discount = torch.full((1, 3), 0.5)
    # G_2 = 1 + 0.5 * 10 = 6, G_1 = 1 + 0.5 * 6 = 4, G_0 = 1 + 0.5 * 4 = 3
    assert_close(compare_through_return(reward, value, discount, cut), row(3.0, 4.0, 6.0))


def test_truncated_step_bootstraps_from_its_own_value():
    reward = row(1.0, 2.0, 3.0)
    value = row(100.0, 10.0, 1000.0)
    cut = row(False, True, False, dtype=torch.bool)  # step 1 ends its episode by the time limit
    discount = torch.full((1, 3), 0.5)  # truncated: the discount stays gamma
    # G_2 = 3 + 0.5 * 1000 = 503, G_1 = 2 + 0.5 * V_1 = 7 (not G_2), G_0 = 1 + 0.5 * 7 = 4.5
    assert_close(compare_through_return(reward, value, discount, cut), row(4.5, 7.0, 503.0))


def test_cut_on_the_last_step_changes_nothing():
    reward, value, discount = row(1.0, 2.0), row(4.0, 8.0), torch.full((1, 2), 0.5)
    # G_1 = 2 + 0.5 * 8 = 6, G_0 = 1 + 0.5 * 6 = 4, with or without a cut at step 1
    for cut in (row(False, False, dtype=torch.bool), row(False, True, dtype=torch.bool)):
        assert_close(compare_through_return(reward, value, discount, cut), row(4.0, 6.0))


def test_rows_of_a_batch_are_independent():
    reward = torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    value = torch.tensor([[0.0, 10.0], [30.0, 20.0]])
    cut = torch.tensor([[False, False], [True, False]])
    discount = torch.full((2, 2), 0.5)
    # row 0: G_1 = 1 + 5 = 6, G_0 = 1 + 3 = 4; row 1: G_1 = 2 + 10 = 12, G_0 = 2 + 0.5 * V_0 = 17
    assert_close(compare_through_return(reward, value, discount, cut), torch.tensor([[4.0, 6.0], [17.0, 12.0]]))
