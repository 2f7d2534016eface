"""Plain and ensembled multi-layer perceptrons."""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import torch
import torch.nn as nn

ACTIVATIONS = {'relu': nn.ReLU, 'tanh': nn.Tanh, 'elu': nn.ELU, 'gelu': nn.GELU, 'silu': nn.SiLU}


def get_activation(name: str) -> type[nn.Module]:
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}'; choose from {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def _after_linear(name: str) -> nn.Module:
    """The activation that follows a linear layer: ReLU overwrites the layer's output in place, which no backward
    pass reads (the linear layer's needs its input, ReLU's its own output), saving a wide batch a buffer and a pass
    over memory (the same values, bit for bit)."""
    activation = get_activation(name)
    return activation(inplace=True) if activation is nn.ReLU else activation()


#: builds a normalisation layer for a number of features (and an ensemble's size, in an ensemble)
NormFactory = Callable[..., nn.Module]


def mlp(in_dim: int, hidden_sizes: Sequence[int], out_dim: int | None = None,
        activation: str = 'relu', norm: Optional[NormFactory] = None,
        hidden_norm: Optional[NormFactory] = None) -> nn.Sequential:
    """Linear layers with `activation` between them; no activation after `out_dim`. With `norm`, a normalisation
    layer before every linear layer; with `hidden_norm`, one after every hidden layer's activation (ReBRAC's
    LayerNorm)."""
    get_activation(activation)  # an unknown name fails without hidden layers too
    layers: list[nn.Module] = []
    for size in hidden_sizes:
        layers += [*_norm(norm, in_dim), nn.Linear(in_dim, size), _after_linear(activation),
                   *_norm(hidden_norm, size)]
        in_dim = size
    if out_dim is not None:
        layers += [*_norm(norm, in_dim), nn.Linear(in_dim, out_dim)]
    return nn.Sequential(*layers)


def _norm(norm: Optional[NormFactory], features: int, **kwargs: int) -> list[nn.Module]:
    return [] if norm is None else [norm(features, **kwargs)]


def per_member(x: torch.Tensor, ensemble_size: int) -> torch.Tensor:
    """[B, in] -> [E, B, in] (a view, one copy of the input per ensemble member); [E, B, in] as it is."""
    return x.unsqueeze(0).expand(ensemble_size, -1, -1) if x.dim() == 2 else x


class EnsembleLinear(nn.Module):
    """`ensemble_size` independent linear layers evaluated in one batched matmul.

    Input [B, in] (shared by all members) or [E, B, in]; output [E, B, out].
    """

    def __init__(self, in_dim: int, out_dim: int, ensemble_size: int) -> None:
        super().__init__()
        self.in_dim, self.out_dim, self.ensemble_size = in_dim, out_dim, ensemble_size
        self.weight = nn.Parameter(torch.empty(ensemble_size, in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(ensemble_size, 1, out_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # the same distribution as nn.Linear's default, drawn per member
        bound = 1.0 / math.sqrt(self.in_dim)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = per_member(x, self.ensemble_size)
        if self.out_dim == 1 and torch.is_grad_enabled():
            return _OneOutput.apply(x, self.weight, self.bias)
        return torch.baddbmm(self.bias, x, self.weight)

    def extra_repr(self) -> str:
        return f'in_dim={self.in_dim}, out_dim={self.out_dim}, ensemble_size={self.ensemble_size}'


class _OneOutput(torch.autograd.Function):
    """`baddbmm(bias, x, weight)` for one output per member (a critic's value), its gradients computed as an outer
    product and a row vector times x: batched matrix products with one column, which baddbmm's own backward runs,
    take several times longer on the CPU. The values are the same bit for bit."""

    generate_vmap_rule = True  # a seed group's vmapped update differentiates it too

    @staticmethod
    def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(bias, x, weight)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        x, weight, _ = inputs
        ctx.save_for_backward(x, weight)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Optional[torch.Tensor], ...]:
        x, weight = ctx.saved_tensors
        needs_x, needs_weight, needs_bias = ctx.needs_input_grad
        grad_x = grad * weight.transpose(1, 2) if needs_x else None  # [E, B, 1] x [E, 1, in]
        grad_weight = torch.bmm(grad.transpose(1, 2), x).transpose(1, 2) if needs_weight else None  # [E, in, 1]
        grad_bias = grad.sum(dim=1, keepdim=True) if needs_bias else None
        return grad_x, grad_weight, grad_bias


class EnsembleLayerNorm(nn.Module):
    """Layer normalisation of each member's features [E, B, features], with each member's own gain and bias."""

    def __init__(self, features: int, ensemble_size: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.features, self.eps = features, eps
        self.weight = nn.Parameter(torch.ones(ensemble_size, 1, features))
        self.bias = nn.Parameter(torch.zeros(ensemble_size, 1, features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (self.features,), eps=self.eps) * self.weight + self.bias


class _PerMember(nn.Module):
    """`per_member` as a layer: what a normalisation before the first linear layer needs."""

    def __init__(self, ensemble_size: int) -> None:
        super().__init__()
        self.ensemble_size = ensemble_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return per_member(x, self.ensemble_size)


class EnsembleMLP(nn.Module):
    """`ensemble_size` MLPs of the same shape, run together: [B, in] -> [E, B, out]."""

    def __init__(self, in_dim: int, hidden_sizes: Sequence[int], out_dim: int, ensemble_size: int,
                 activation: str = 'relu', norm: Optional[NormFactory] = None,
                 hidden_norm: Optional[NormFactory] = None) -> None:
        """`norm`: a normalisation before every linear layer; `hidden_norm`: one after every hidden activation."""
        super().__init__()
        get_activation(activation)  # an unknown name fails without hidden layers too
        layers: list[nn.Module] = []
        if norm is not None:  # each member normalises its own input, so the input comes as [E, B, in]
            layers.append(_PerMember(ensemble_size))
        for size in hidden_sizes:
            layers += [*_norm(norm, in_dim, ensemble_size=ensemble_size), EnsembleLinear(in_dim, size, ensemble_size),
                       _after_linear(activation), *_norm(hidden_norm, size, ensemble_size=ensemble_size)]
            in_dim = size
        layers += [*_norm(norm, in_dim, ensemble_size=ensemble_size), EnsembleLinear(in_dim, out_dim, ensemble_size)]
        self.net = nn.Sequential(*layers)
        self.ensemble_size = ensemble_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
