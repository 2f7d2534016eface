"""Deterministic acting networks, the modules `tidal export` traces into one TorchScript or ONNX file.

A policy's `export_actor` assembles one from its own layers. They hold plain tensor ops only: no
`torch.distributions` and no sampling, just the layers and the arithmetic of the most likely action
(tanh of a Gaussian mean, a Gaussian mean, the argmax of masked logits).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from tidal.models.taac import keep_or_switch_values
from tidal.rl_utils import masked_logits
from tidal.rl_utils.trajectory import Trajectory, select_trajectory, switch_logits

#: Given real observations, the inputs to feed a network and the outputs it must give (`ActingNetwork.parity`).
ParityCase = Callable[[torch.Tensor], tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]]


def _optional(mask: tuple[torch.Tensor, ...]) -> Optional[torch.Tensor]:
    """The action mask of a forward that takes it as an optional trailing input."""
    return mask[0] if mask else None


class ActingNetwork(nn.Module):
    """`core` behind the observation normaliser: forward takes the tensors `input_names` names, in order,
    the observation first, and returns those `output_names` names (one tensor, or a tuple of several).

    With `is_policy` the first output is the action in the policy's range, which the exporter maps to the
    env's; the eval mode with `eval.deterministic` (and `eval_overrides` set under `policy.eval`) acts the
    same, and an input that is no part of the observation is acting state that the eval mode returns under
    the same name (TAAC's `prev_tau`). Without it (MuZero's networks) the outputs are no action, and
    `parity` says what they must be.
    """

    def __init__(self, core: nn.Module, input_names: Sequence[str] = ('obs',),
                 output_names: Sequence[str] = ('action',), obs_normalizer: Optional[nn.Module] = None,
                 note: str = '', is_policy: bool = True, eval_overrides: Optional[dict[str, Any]] = None,
                 parity: Optional[ParityCase] = None) -> None:
        super().__init__()
        self.core, self.obs_normalizer = core, obs_normalizer
        self.input_names, self.output_names = tuple(input_names), tuple(output_names)
        self.note, self.is_policy = note, is_policy
        self.eval_overrides = dict(eval_overrides or {})
        self.parity = parity

    def forward(self, *inputs: torch.Tensor) -> Any:
        obs = inputs[0] if self.obs_normalizer is None else self.obs_normalizer(inputs[0])
        return self.core(obs, *inputs[1:])


class TanhMean(nn.Module):
    """tanh(mu) of an actor giving the (mean, log std) of a pre-tanh Gaussian: SAC's deterministic action."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.actor(obs)[0])


class MaskedArgmax(nn.Module):
    """The allowed action of the largest logit; the mask (1 = allowed) is an optional second input."""

    def __init__(self, logits: nn.Module) -> None:
        super().__init__()
        self.logits = logits

    def forward(self, obs: torch.Tensor, *action_mask: torch.Tensor) -> torch.Tensor:
        return masked_logits(self.logits(obs), _optional(action_mask)).argmax(dim=-1)


class HeadMode(nn.Module):
    """The mode of an on-policy head (`policy_head.mode`: argmax or Gaussian mean) on the encoder's features."""

    def __init__(self, encoder: nn.Module, policy_head: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.policy_head: Any = policy_head  # a head with mode(features, action_mask)

    def forward(self, obs: torch.Tensor, *action_mask: torch.Tensor) -> torch.Tensor:
        return self.policy_head.mode(self.encoder(obs), _optional(action_mask))


class Encoded(nn.Module):
    """An acting network that acts on a learned representation of the observation instead of on it."""

    def __init__(self, represent: Callable[[torch.Tensor], torch.Tensor], owner: nn.Module,
                 acting: nn.Module) -> None:
        super().__init__()
        self.owner, self.acting = owner, acting  # `owner` holds the weights `represent` uses
        self._represent = represent

    def forward(self, obs: torch.Tensor, *rest: torch.Tensor) -> Any:
        return self.acting(self._represent(obs), *rest)


class EnvActionScale(nn.Module):
    """The env adapter's map of a policy action to the env's: clipped to the policy's range, then the affine
    map of that range onto the env's bounds (an identity where the env takes the policy's range as it is)."""

    policy_low: torch.Tensor
    policy_high: torch.Tensor
    env_low: torch.Tensor
    scale: torch.Tensor

    def __init__(self, policy_low: np.ndarray, policy_high: np.ndarray, env_low: np.ndarray,
                 scale: np.ndarray) -> None:
        super().__init__()
        as_tensor = lambda array: torch.as_tensor(np.asarray(array, dtype=np.float32))  # noqa: E731
        self.register_buffer('policy_low', as_tensor(policy_low))
        self.register_buffer('policy_high', as_tensor(policy_high))
        self.register_buffer('env_low', as_tensor(env_low))
        self.register_buffer('scale', as_tensor(scale))

    def forward(self, action: torch.Tensor) -> torch.Tensor:
        clipped = torch.maximum(torch.minimum(action, self.policy_high), self.policy_low)
        return self.env_low + (clipped - self.policy_low) * self.scale


class WithEnvActions(nn.Module):
    """An acting network whose first output goes through `action_scale`: what the env receives."""

    def __init__(self, acting: ActingNetwork, action_scale: Optional[nn.Module]) -> None:
        super().__init__()
        self.acting, self.action_scale = acting, action_scale

    def forward(self, *inputs: torch.Tensor) -> Any:
        outputs = self.acting(*inputs)
        if self.action_scale is None:
            return outputs
        if isinstance(outputs, tuple):
            return (self.action_scale(outputs[0]), *outputs[1:])
        return self.action_scale(outputs)


class CastObservation(nn.Module):
    """`network` on observations of another dtype, cast first to the one it was exported for: a raw gymnasium
    env's float64 vectors, which the env adapter casts to float32 the same way."""

    def __init__(self, network: nn.Module, dtype: torch.dtype) -> None:
        super().__init__()
        self.network, self.dtype = network, dtype

    def forward(self, obs: torch.Tensor, *rest: torch.Tensor) -> Any:
        return self.network(obs.to(self.dtype), *rest)


class MuZeroNetworks(nn.Module):
    """MuZero's three networks side by side in one forward, each on its own inputs: h(obs); f(latent) as
    policy logits and value; g(latent, action) as next latent and reward (values in env units). A tree
    search over them is the policy, which no single forward is."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model: Any = model  # a MuZeroModel (h, f, g and the value supports)

    def forward(self, obs: torch.Tensor, latent: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, ...]:
        prediction = self.model.predict(latent)
        step = self.model.recurrent_inference(latent, action)
        return (self.model.represent(obs), prediction.policy_logits, self.model.value(prediction), step.latent,
                self.model.reward(step))


class GreedyTrajectorySwitch(nn.Module):
    """A temporally abstract actor's greedy step (TAAC): propose tanh(mu) given the previous trajectory, then
    keep that trajectory or take the proposed one, whichever the critics' minimum values higher (the larger
    switch logit). Returns (action [B, A], new trajectory [B, K, A]), which is the next step's `prev_tau`."""

    def __init__(self, model: nn.Module, trajectory: Trajectory, switch_alpha: float,
                 advantage_clip: Optional[tuple[float, float]]) -> None:
        super().__init__()
        self.model: Any = model  # a TrajectoryQAC: actor(obs, tau) and critic(obs, tau)
        self.trajectory = trajectory
        self.switch_alpha, self.advantage_clip = switch_alpha, advantage_clip

    def forward(self, obs: torch.Tensor, prev_tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, _ = self.model.actor(obs, prev_tau)
        kept = self.trajectory.advance(prev_tau)
        new = self.trajectory.from_action(torch.tanh(mu), prev_tau)
        q = keep_or_switch_values(self.model.critic, obs, kept, new)
        logits = switch_logits(q[:, 0], q[:, 1], self.switch_alpha, self.advantage_clip)
        tau = select_trajectory(logits[:, 1] > logits[:, 0], new, kept)
        return tau[:, 0], tau
