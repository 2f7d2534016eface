"""MuZero's value and reward representation: an invertible squashing, then a categorical support.

Returns in most games span orders of magnitude. MuZero (arXiv 1911.08265, appendix F) learns them as
a distribution over the integers [-size, size] of the squashed value h(x) = sign(x)(sqrt(|x| + 1) - 1)
+ eps x (Pohlen et al. 2018, arXiv 1805.11593), trained by cross-entropy against a "two-hot" target,
so one network fits small and large returns alike.
"""
from __future__ import annotations

import torch

EPSILON = 1e-3  # the eps of h; MuZero's value


def scale_value(x: torch.Tensor, eps: float = EPSILON) -> torch.Tensor:
    """h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x: near-linear around 0, square-root for large |x|."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x


def unscale_value(y: torch.Tensor, eps: float = EPSILON) -> torch.Tensor:
    """h^-1(y), the closed form of Pohlen et al. (proposition A.2): solve the quadratic in sqrt(|x| + 1).

    The root (sqrt(1 + 4 eps c) - 1) / (2 eps), c = |y| + 1 + eps, is computed rationalised as
    2 c / (sqrt(1 + 4 eps c) + 1): the paper's form subtracts two nearly equal numbers and divides the
    rounding error by 2 eps, so in float32 h^-1(0) came out as 2.6e-5 instead of 0.
    """
    c = y.abs() + 1.0 + eps
    root = 2.0 * c / (torch.sqrt(1.0 + 4.0 * eps * c) + 1.0)
    return torch.sign(y) * (root.pow(2) - 1.0)


def to_support(y: torch.Tensor, size: int) -> torch.Tensor:
    """Two-hot probabilities [..., 2 size + 1] over the integers -size..size whose mean is y.

    y (already squashed) is clamped to the support; its mass is split between the two integers around
    it in proportion to closeness, so `from_support` of the result gives y back exactly. size >= 1.
    """
    y = y.clamp(-size, size)
    low = y.floor().clamp(max=size - 1)  # y == size puts all its mass on the upper neighbour
    upper_weight = (y - low).unsqueeze(-1)
    index = (low + size).long().unsqueeze(-1)
    probs = torch.zeros(*y.shape, 2 * size + 1, dtype=y.dtype, device=y.device)
    probs.scatter_(-1, index, 1.0 - upper_weight)
    probs.scatter_(-1, index + 1, upper_weight)
    return probs


def from_support(probs: torch.Tensor, size: int) -> torch.Tensor:
    """The mean of probabilities [..., 2 size + 1] over -size..size (squashed units)."""
    support = torch.arange(-size, size + 1, dtype=probs.dtype, device=probs.device)
    return (probs * support).sum(dim=-1)


def support_to_value(logits: torch.Tensor, size: int, eps: float = EPSILON) -> torch.Tensor:
    """A value in env units from a network's support logits: softmax, mean, then h^-1."""
    return unscale_value(from_support(logits.softmax(dim=-1), size), eps)


def value_to_support(x: torch.Tensor, size: int, eps: float = EPSILON) -> torch.Tensor:
    """The cross-entropy target of a value in env units: h, then two-hot."""
    return to_support(scale_value(x, eps), size)
