"""The advantage actor-critic loss against numbers computed by hand."""
import pytest
import torch

from tidal.rl_utils.a2c import a2c_loss


def test_a2c_loss_terms_and_gradients_match_the_hand_computed_ones():
    log_prob = torch.tensor([-0.5, -1.0], requires_grad=True)
    entropy = torch.tensor([0.6, 0.4], requires_grad=True)
    value = torch.tensor([1.0, 0.0], requires_grad=True)
    advantage = torch.tensor([2.0, 1.0], requires_grad=True)
    returns = torch.tensor([3.0, -1.0], requires_grad=True)
    loss = a2c_loss(log_prob, entropy, value, advantage, returns, value_weight=0.5, entropy_weight=0.1)
    # policy: -mean(-0.5 * 2, -1.0 * 1) = 1; value: mean((1 - 3)^2, (0 + 1)^2) = 2.5; entropy: mean(0.6, 0.4) = 0.5
    policy, value_loss, mean_entropy, total = (float(term.detach()) for term in
                                               (loss.policy, loss.value, loss.entropy, loss.total))
    assert (policy, value_loss, mean_entropy) == pytest.approx((1.0, 2.5, 0.5))
    assert total == pytest.approx(1.0 + 0.5 * 2.5 - 0.1 * 0.5)  # 2.2
    loss.total.backward()
    # d/d log pi = -A / B; d/dV = value_weight * 2 (V - R) / B; d/dH = -entropy_weight / B
    assert log_prob.grad.tolist() == pytest.approx([-1.0, -0.5])
    assert value.grad.tolist() == pytest.approx([-1.0, 0.5])
    assert entropy.grad.tolist() == pytest.approx([-0.05, -0.05])
    # the advantage and the return are targets: no gradient reaches them
    assert advantage.grad is None and returns.grad is None
