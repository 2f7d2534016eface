import math

import pytest
import torch

from tidal.rl_utils import masked_logits, tanh_gaussian_log_prob, tanh_gaussian_sample


def test_tanh_gaussian_log_prob_matches_change_of_variables():
    mu, log_std = torch.tensor([[0.3, -0.2]]), torch.tensor([[-0.5, 0.1]])
    u = torch.tensor([[0.7, -1.1]])
    expected = (torch.distributions.Normal(mu, log_std.exp()).log_prob(u)
                - torch.log(1 - torch.tanh(u).pow(2))).sum(-1)
    assert tanh_gaussian_log_prob(u, mu, log_std).item() == pytest.approx(expected.item(), abs=1e-5)


def test_tanh_gaussian_log_prob_stays_finite_where_tanh_saturates():
    u = torch.tensor([[30.0]])
    assert math.isfinite(tanh_gaussian_log_prob(u, torch.zeros(1, 1), torch.zeros(1, 1)).item())


def test_tanh_gaussian_sample_is_bounded_and_consistent_with_log_prob():
    torch.manual_seed(0)
    mu, log_std = torch.randn(64, 3), torch.randn(64, 3).clamp(-2, 1)
    action, log_prob = tanh_gaussian_sample(mu, log_std)
    assert action.shape == (64, 3) and log_prob.shape == (64,)
    assert action.abs().max() <= 1.0
    pre_tanh = torch.atanh(action.clamp(-1 + 1e-6, 1 - 1e-6))
    ok = action.abs().max(dim=-1).values < 0.999  # away from saturation atanh recovers u exactly
    assert torch.allclose(log_prob[ok], tanh_gaussian_log_prob(pre_tanh, mu, log_std)[ok], atol=1e-3)


def test_tanh_gaussian_sample_is_reparameterized():
    mu = torch.zeros(4, 1, requires_grad=True)
    action, _ = tanh_gaussian_sample(mu, torch.zeros(4, 1))
    action.sum().backward()
    assert mu.grad is not None and (mu.grad > 0).all()


def test_masked_logits_give_zero_probability_and_finite_log_prob():
    logits = torch.zeros(1, 3)
    masked = masked_logits(logits, torch.tensor([[1, 0, 1]]))
    prob = masked.softmax(-1)
    assert prob.tolist()[0] == pytest.approx([0.5, 0.0, 0.5])
    assert torch.isfinite(prob * masked.log_softmax(-1)).all()
