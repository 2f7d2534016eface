"""Batch renormalisation: BatchNorm while warming up, then Ioffe's r and d corrections, per ensemble member."""
import torch
import torch.nn as nn

from tidal.models.batch_renorm import BatchRenorm


def test_while_warming_up_it_normalises_as_batchnorm_and_moves_its_running_statistics_by_momentum():
    torch.manual_seed(0)
    renorm, norm = BatchRenorm(4, momentum=0.1), nn.BatchNorm1d(4, eps=1e-3, momentum=0.1)
    x = (torch.randn(32, 4) * 3 + 1).requires_grad_()
    x_copy = x.detach().clone().requires_grad_()
    out, expected = renorm(x), norm(x_copy)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    out.pow(3).sum().backward()
    expected.pow(3).sum().backward()
    torch.testing.assert_close(x.grad, x_copy.grad, atol=1e-4, rtol=1e-4)  # gradients through the batch statistics
    torch.testing.assert_close(renorm.running_mean, 0.1 * x.detach().mean(0))
    torch.testing.assert_close(renorm.running_var, 0.9 + 0.1 * x.detach().var(0, unbiased=False))
    assert int(renorm.steps) == 1


def test_after_warm_up_r_and_d_correct_the_batch_towards_the_running_statistics_clipped():
    renorm = BatchRenorm(2, momentum=0.0, eps=0.0, warmup_steps=0, r_max=3.0, d_max=5.0)
    renorm.steps.fill_(1)
    renorm.running_mean.copy_(torch.tensor([0.0, 1.0]))
    renorm.running_var.copy_(torch.tensor([1.0, 4.0]))
    # feature 0: batch mean 7, std 10 (r = 10 / 1 clips to 3, d = 7 / 1 clips to 5);
    # feature 1: batch mean 2, std 3 (r = 3 / 2 = 1.5, d = (2 - 1) / 2 = 0.5)
    x = torch.tensor([[-3.0, -1.0], [17.0, 5.0]])
    expected = torch.tensor([[-1.0 * 3 + 5, -1.0 * 1.5 + 0.5], [1.0 * 3 + 5, 1.0 * 1.5 + 0.5]])
    torch.testing.assert_close(renorm(x), expected)


def test_r_and_d_are_constants_of_the_gradient():
    renorm = BatchRenorm(3, warmup_steps=0)
    renorm.steps.fill_(1)
    renorm.running_var.fill_(2.0)
    x = torch.randn(16, 3, requires_grad=True)
    renorm(x).sum().backward()
    # the output's sum over rows is B * (d * weight + bias) per feature: constant in x when d is
    torch.testing.assert_close(x.grad, torch.zeros_like(x), atol=1e-5, rtol=0)


def test_each_ensemble_member_keeps_its_own_statistics():
    renorm = BatchRenorm(3, ensemble_size=2)
    x = torch.randn(2, 64, 3)
    x[1] = x[1] * 5 + 10
    out = renorm(x)
    torch.testing.assert_close(out.mean(dim=1), torch.zeros(2, 3), atol=1e-5, rtol=0)
    assert renorm.running_mean.shape == (2, 1, 3)
    torch.testing.assert_close(renorm.running_mean, 0.01 * x.mean(dim=1, keepdim=True))


def test_eval_mode_reads_the_running_statistics_and_leaves_them():
    renorm = BatchRenorm(2)
    renorm.running_mean.copy_(torch.tensor([1.0, -1.0]))
    renorm.running_var.copy_(torch.tensor([4.0, 0.25]))
    renorm.eval()
    x = torch.tensor([[3.0, 0.0]])  # one row: batch statistics would not exist
    expected = (x - renorm.running_mean) / (renorm.running_var + 1e-3).sqrt()
    torch.testing.assert_close(renorm(x), expected)
    assert int(renorm.steps) == 0
