"""Action trajectories of temporally abstract policies: a policy either follows its current
trajectory one more step or replaces it with a new one.

A trajectory `tau` is a tensor [B, K, A] holding the action and its first K - 1 derivatives
(K = 1: a constant action, 2: a line, 3: a parabola). Actions and derivatives live in [-1, 1] and a
unit of derivative moves the action by 2 (the width of the range) per step, clamped at the bounds.
"""
from __future__ import annotations

import torch


class Trajectory:
    """Dynamics of one trajectory family; subclasses fix `size` (K) and the two maps."""

    size: int = 1

    def __init__(self, inverse_mode: bool = True) -> None:
        self.inverse_mode = inverse_mode

    def zeros(self, batch: int, action_dim: int, device: torch.device | str = 'cpu') -> torch.Tensor:
        return torch.zeros(batch, self.size, action_dim, device=device)

    def advance(self, tau: torch.Tensor) -> torch.Tensor:
        """The trajectory one step later (b = 0: keep following it)."""
        raise NotImplementedError

    def from_action(self, action: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """The new trajectory that a freshly sampled `action` [B, A] starts from `tau` (b = 1).

        Differentiable in `action`, so the actor's gradient flows through it.
        """
        raise NotImplementedError


class ConstantTrajectory(Trajectory):
    """TAAC: the trajectory is one action, repeated until the policy switches."""

    size = 1

    def advance(self, tau: torch.Tensor) -> torch.Tensor:
        return tau

    def from_action(self, action: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        return action.unsqueeze(1)


class LinearTrajectory(Trajectory):
    """TaacL: a' = clamp(a + 2 v), v constant.

    A new trajectory is started from an action, its slope inferred as v = (a_new - a) / 2
    (`inverse_mode`), or the action is taken as the new slope and the line stepped once.
    """

    size = 2

    def advance(self, tau: torch.Tensor) -> torch.Tensor:
        a, v = tau[:, 0], tau[:, 1]
        return torch.stack([(a + 2.0 * v).clamp(-1.0, 1.0), v], dim=1)

    def from_action(self, action: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        a = tau[:, 0]
        if self.inverse_mode:
            return torch.stack([action, (action - a) / 2.0], dim=1)
        return self.advance(torch.stack([a, action], dim=1))


class QuadraticTrajectory(Trajectory):
    """TaacQ: v' = clamp(v + 2 u), a' = clamp(a + 2 v'), u constant.

    A new trajectory restarts from the current action with zero velocity: in `inverse_mode` the
    action is the next action (v = (a_new - a) / 2, u = v / 2), otherwise it is the new curvature u.
    """

    size = 3

    def advance(self, tau: torch.Tensor) -> torch.Tensor:
        a, v, u = tau[:, 0], tau[:, 1], tau[:, 2]
        v = (v + 2.0 * u).clamp(-1.0, 1.0)
        return torch.stack([(a + 2.0 * v).clamp(-1.0, 1.0), v, u], dim=1)

    def from_action(self, action: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        a = tau[:, 0]
        if self.inverse_mode:
            v = (action - a) / 2.0
            return torch.stack([action, v, v / 2.0], dim=1)
        return self.advance(torch.stack([a, torch.zeros_like(a), action], dim=1))


def select_trajectory(switch: torch.Tensor, new_tau: torch.Tensor, kept_tau: torch.Tensor) -> torch.Tensor:
    """Per row, `new_tau` where `switch` [B] is set, else `kept_tau`."""
    return torch.where(switch.bool().reshape(-1, 1, 1), new_tau, kept_tau)


def switch_logits(q_keep: torch.Tensor, q_new: torch.Tensor, alpha: torch.Tensor | float,
                  advantage_clip: tuple[float, float] | None = None) -> torch.Tensor:
    """Logits [B, 2] of the switch b over (keep, new): softmax gives exp(Q / alpha), normalised.

    The logits are shifted so the larger is 0, which keeps exp finite for any Q scale. With
    `advantage_clip` = (low, high), the advantage Q(new) - Q(keep) is clamped first, which bounds
    how certain the switch can become.
    """
    advantage = q_new - q_keep
    if advantage_clip is not None:
        advantage = advantage.clamp(advantage_clip[0], advantage_clip[1])
    logits = torch.stack([torch.zeros_like(advantage), advantage], dim=-1)
    logits = logits / torch.clamp(torch.as_tensor(alpha, dtype=logits.dtype), min=1e-10)
    return logits - logits.max(dim=-1, keepdim=True).values
