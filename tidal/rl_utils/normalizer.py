"""Running normalisers of observations and rewards, as Stable-Baselines3's VecNormalize keeps them.

Statistics are float64 on the device the data lives on, so updating them costs a few batched ops and
no host round trip; `state_dict` copies them to the CPU for checkpoints. On the CPU they are kept as
numpy arrays (read as tensors that share their memory): they are updated once per env step while
acting, where a torch op on a handful of numbers costs several microseconds of dispatch and a numpy
op about one (the reward scaler's step at one env: 210 -> 70 us).
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import torch
import torch.nn as nn

from tidal.base.errors import TidalError

_VAR_EPS = 1e-8  # keeps sqrt(var) away from 0 for a constant input

Array = Union[np.ndarray, torch.Tensor]  # numpy for statistics on the CPU, a tensor on any other device


def _native(tensor: torch.Tensor) -> Array:
    """`tensor` without a copy in the form its device computes fastest on per step: numpy on the CPU."""
    return tensor.numpy() if tensor.device.type == 'cpu' else tensor


class NormalizerError(TidalError, ValueError):
    """Data or a saved state whose shape does not fit the normaliser."""


class RunningMeanStd:
    """Mean and (population) variance of every sample seen so far, per element of `shape`.

    `count` starts at `epsilon`, with mean 0 and var 1, so the first batch is not divided by a zero
    variance and a prior of (almost) no weight is folded in, as in SB3.
    """

    def __init__(self, shape: tuple[int, ...], device: torch.device | str, epsilon: float = 1e-4) -> None:
        self.shape = torch.Size(shape)
        self.device = torch.device(device)
        self._mean = self._own(torch.zeros(self.shape))
        self._var = self._own(torch.ones(self.shape))
        self._count = self._own(torch.tensor(epsilon))

    def _own(self, tensor: torch.Tensor) -> Array:
        """A float64 copy of `tensor` on this device, held natively."""
        return _native(tensor.detach().to(device=self.device, dtype=torch.float64, copy=True))

    @property
    def mean(self) -> torch.Tensor:
        return torch.as_tensor(self._mean)

    @property
    def var(self) -> torch.Tensor:
        return torch.as_tensor(self._var)

    @property
    def count(self) -> torch.Tensor:
        return torch.as_tensor(self._count)

    @property
    def native_var(self) -> Array:
        """`var` as it is held (numpy on the CPU), for arithmetic done per env step."""
        return self._var

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the moments of a batch x [B, *shape] (Chan et al. 1979, parallel variance)."""
        if x.shape[1:] != self.shape:
            raise NormalizerError(f'RunningMeanStd of shape {tuple(self.shape)} got a batch of shape {tuple(x.shape)}')
        self.fold(_native(x.detach().to(device=self.device, dtype=torch.float64)))

    def fold(self, data: Array) -> None:
        """`update` with float64 data [B, *shape] already in native form (numpy on the CPU)."""
        count = data.shape[0]
        if count == 0:
            return
        if count == 1:  # one env: skip the reductions (numpy's mean alone costs several microseconds)
            self._merge(data[0], data[0] * 0.0, 1)
            return
        batch_mean = data.mean(0)
        self._merge(batch_mean, ((data - batch_mean) ** 2).mean(0), count)

    def merge_moments(self, batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: Any) -> None:
        """Fold in data known only by its mean, (population) variance and count."""
        count = self._own(batch_count) if isinstance(batch_count, torch.Tensor) else batch_count
        self._merge(self._own(batch_mean), self._own(batch_var), count)

    def _merge(self, batch_mean: Array, batch_var: Array, batch_count: Any) -> None:
        delta = batch_mean - self._mean
        total = self._count + batch_count
        # M2 = M2_a + M2_b + delta^2 n_a n_b / n  (Chan, Golub & LeVeque's pairwise update)
        m2 = self._var * self._count + batch_var * batch_count + delta * delta * self._count * batch_count / total
        # new arrays, not updates in place: a tensor read from `mean` before stays what it was
        self._mean = self._mean + delta * batch_count / total
        self._var = m2 / total
        self._count = total

    def normalize(self, x: torch.Tensor, clip: float) -> torch.Tensor:
        """clamp((x - mean) / sqrt(var + 1e-8), -clip, clip) as float32."""
        scaled = (x.to(torch.float64) - self.mean) / torch.sqrt(self.var + _VAR_EPS)
        return scaled.clamp(-clip, clip).to(torch.float32)

    def frozen(self, clip: float) -> FrozenNormalizer:
        """`normalize(x, clip)` with the statistics of now, as a module that saves with a network (export)."""
        return FrozenNormalizer(self.mean, self.var, clip)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {'mean': self.mean.cpu().clone(), 'var': self.var.cpu().clone(), 'count': self.count.cpu().clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for key in ('mean', 'var'):
            if state[key].shape != self.shape:
                raise NormalizerError(f'saved RunningMeanStd {key} has shape {tuple(state[key].shape)}, '
                                      f'this one has shape {tuple(self.shape)}')
        self._mean, self._var, self._count = (self._own(state[key]) for key in ('mean', 'var', 'count'))


class FrozenNormalizer(nn.Module):
    """RunningMeanStd.normalize with fixed statistics: the same float64 arithmetic, so an exported policy
    sees the inputs its eval mode sees."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, mean: torch.Tensor, var: torch.Tensor, clip: float) -> None:
        super().__init__()
        self.clip = float(clip)
        self.register_buffer('mean', mean.detach().to(torch.float64).clone())
        self.register_buffer('std', torch.sqrt(var.detach().to(torch.float64) + _VAR_EPS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x.to(torch.float64) - self.mean) / self.std).clamp(-self.clip, self.clip).to(torch.float32)


def moments_added(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> Optional[tuple]:
    """(mean, var, count) of the data that turned state `before` into state `after`; None if none was added.

    Exact: it inverts the pairwise merge, M2 = M2_before + M2_added + delta^2 n_before n_added / n.
    """
    count0, mean0, var0 = (before[key].to(torch.float64) for key in ('count', 'mean', 'var'))
    count, mean, var = (after[key].to(torch.float64) for key in ('count', 'mean', 'var'))
    added = count - count0
    if float(added) <= 0:
        return None
    added_mean = (mean * count - mean0 * count0) / added
    added_m2 = var * count - var0 * count0 - (added_mean - mean0).pow(2) * count0 * added / count
    return added_mean, (added_m2 / added).clamp_min(0.0), added


class RewardScaler:
    """Divides rewards by the running std of each env's discounted return (VecNormalize's reward
    normalisation): the return, not the reward, sets the scale the value function has to fit. The
    mean is not subtracted, so the sign of a reward, and whether living is good or bad, is kept.
    """

    def __init__(self, gamma: float, clip: float, device: torch.device | str) -> None:
        self.gamma, self.clip, self.device = gamma, clip, torch.device(device)
        self.return_rms = RunningMeanStd((), self.device)
        self.returns: Optional[torch.Tensor] = None  # [N] discounted return so far, sized on the first call

    @torch.no_grad()
    def scale(self, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        """Scaled rewards [N] float32; `done` [N] restarts the return of the envs whose episode ended."""
        reward64 = self._fold(reward, done)
        scaled = (reward64 / (self.return_rms.native_var + _VAR_EPS) ** 0.5).clip(-self.clip, self.clip)
        return torch.as_tensor(scaled, dtype=torch.float32)

    @torch.no_grad()
    def update(self, reward: torch.Tensor, done: torch.Tensor) -> None:
        """`scale`'s update of the returns and their statistics, without scaling: rewards [N] (or [N, agents],
        one return per agent) kept as they are and scaled later, by `normalize`."""
        self._fold(reward, done)

    def _fold(self, reward: torch.Tensor, done: torch.Tensor) -> Array:
        """Extend each env's discounted return by `reward`, fold the returns into `return_rms`, restart those
        of the envs that are `done`; gives the reward as float64, held natively."""
        if self.returns is None:
            self.returns = torch.zeros(reward.shape, dtype=torch.float64, device=self.device)
        elif reward.shape != self.returns.shape:
            raise NormalizerError(f'RewardScaler holds returns of {tuple(self.returns.shape)} envs, '
                                  f'got rewards of shape {tuple(reward.shape)}')
        reward64 = _native(reward.detach().to(device=self.device, dtype=torch.float64))
        returns = _native(self.returns) * self.gamma + reward64
        self.return_rms.fold(returns.reshape(-1))
        returns[_native(done.to(device=self.device, dtype=torch.bool))] = 0.0
        self.returns = torch.as_tensor(returns)
        return reward64

    def normalize(self, reward: torch.Tensor) -> torch.Tensor:
        """clamp(reward / sqrt(var + 1e-8), -clip, clip) as float32 under the return statistics of now,
        without updating them: rewards read back from a replay."""
        std = torch.sqrt(self.return_rms.var.to(reward.device) + _VAR_EPS)
        return (reward.to(torch.float64) / std).clamp(-self.clip, self.clip).to(torch.float32)

    def restart(self) -> None:
        """New episodes in every env: each discounted return starts afresh (its size with the next step)."""
        self.returns = None

    def returns_state(self) -> Optional[torch.Tensor]:
        """A CPU copy of each env's discounted return so far (None before the first step): acting state a
        policy saves for an exact resume."""
        return None if self.returns is None else self.returns.cpu().clone()

    def load_returns(self, returns: Optional[torch.Tensor]) -> None:
        """Put back what `returns_state` gave."""
        self.returns = None if returns is None else returns.to(device=self.device, dtype=torch.float64).clone()

    def state_dict(self) -> dict[str, Any]:
        return {'return_rms': self.return_rms.state_dict(), 'returns': self.returns_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.return_rms.load_state_dict(state['return_rms'])
        self.load_returns(state['returns'])
