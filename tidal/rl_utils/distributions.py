"""Action distributions shared by every maximum-entropy policy."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.distributions import Categorical, Distribution, kl_divergence

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def tanh_gaussian_log_prob(pre_tanh: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)) for u ~ N(mu, std), summed over action dims: [B, A] -> [B].

    The change of variables subtracts log(1 - tanh(u)^2) (SAC, arXiv 1801.01290, appendix C, eq. 21),
    written as 2 (log 2 - u - softplus(-2u)) so it stays finite where tanh saturates.
    """
    normal = -0.5 * ((pre_tanh - mu) / log_std.exp()).pow(2) - log_std - _HALF_LOG_2PI
    squash = 2.0 * (_LOG_2 - pre_tanh - F.softplus(-2.0 * pre_tanh))
    return (normal - squash).sum(dim=-1)


def tanh_gaussian_sample(mu: torch.Tensor, log_std: torch.Tensor, generator: torch.Generator | None = None,
                         noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterized sample a = tanh(mu + std * eps) and its log-probability [B]; eps is `noise` when given
    (drawn beforehand, as a seed group's loss needs), else drawn from `generator` (torch's global one when None)."""
    if noise is None:
        noise = torch.randn(mu.shape, dtype=mu.dtype, device=mu.device, generator=generator)
    pre_tanh = mu + log_std.exp() * noise
    normal = -0.5 * noise.pow(2) - log_std - _HALF_LOG_2PI  # the same as above with (u - mu) / std = eps
    squash = 2.0 * (_LOG_2 - pre_tanh - F.softplus(-2.0 * pre_tanh))
    return torch.tanh(pre_tanh), (normal - squash).sum(dim=-1)


MASKED_LOGIT = -1e8  # finite, so that 0 * log p stays 0 for masked actions


def masked_logits(logits: torch.Tensor, action_mask: torch.Tensor | None) -> torch.Tensor:
    """Logits with invalid actions (mask 0/False) pushed to a very low value."""
    if action_mask is None:
        return logits
    return logits.masked_fill(~action_mask.bool(), MASKED_LOGIT)



def gumbel_max_sample(logits: torch.Tensor, generator: torch.Generator | None = None,
                      uniform: torch.Tensor | None = None) -> torch.Tensor:
    """A categorical sample [B] from unnormalized logits [B, A]: argmax(logits + Gumbel noise), the noise
    made from `uniform` numbers in [0, 1) of the logits' shape, drawn from `generator` (torch's global one when
    None) unless given.

    On small batches it costs half of `torch.multinomial` and needs no softmax; masked logits never win.
    """
    if uniform is None:
        uniform = torch.rand(logits.shape, dtype=logits.dtype, device=logits.device, generator=generator)
    uniform = uniform.clamp(min=torch.finfo(logits.dtype).tiny)
    return (logits - (-uniform.log()).log()).argmax(dim=-1)


def policy_kl(p: Distribution, q: Distribution) -> torch.Tensor:
    """KL(p || q) of two action distributions of one family. Categoricals sum p * (log p - log q) directly:
    torch's own form marks zero-probability actions by boolean indexing, which `torch.func.vmap` (a seed group's
    update) cannot batch; masked actions have finite logits here, so their terms are 0 either way."""
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        return (p.probs * (p.logits - q.logits)).sum(-1)
    return kl_divergence(p, q)
