"""Targets of a model unrolled along a replayed trajectory (MuZero, arXiv 1911.08265, appendix G).

A sample starts at state 0 of a trajectory window; state j is the observation j steps later. The window
knows where its episode stops: `end` is the index of the last state with a known value, which is

- the final observation of an episode that terminated (value 0) or was truncated (bootstrap value),
- or, for an episode still running at the replay's newest step, the newest stored state.

States past `end` are absorbing: they keep the end state's value and get zero reward, so a model
unrolled past an episode's end learns to stay there.
"""
from __future__ import annotations

import torch


def scale_gradient(x: torch.Tensor, factor: float) -> torch.Tensor:
    """x in the forward pass, `factor` times its gradient in the backward pass (MuZero app. G: each
    recurrent step halves the gradient reaching the steps before it)."""
    return x * factor + x.detach() * (1.0 - factor)


def unrolled_value_targets(reward: torch.Tensor, value: torch.Tensor, end: torch.Tensor, td_steps: torch.Tensor,
                           discount: float, num_states: int) -> torch.Tensor:
    """n-step value targets [B, num_states] of states 0..num_states-1 of each window.

    reward [B, W]: reward of the transition out of state j (only j < end is read);
    value [B, W + 1]: value of state j (only j <= end is read);
    end [B] long: index of each window's end state (see the module docstring), at most W;
    td_steps [B, num_states] long: steps each target looks ahead before it bootstraps; a negative
    count looks ahead to the end state (a Monte-Carlo return).

    State k (capped at `end`) gets sum_{i<m} discount^i reward[k + i] + discount^m value[k + m] with
    m = min(td_steps, end - k).
    """
    batch, width = reward.shape
    if value.shape != (batch, width + 1):
        raise ValueError(f'value must be [B, W + 1] = {[batch, width + 1]} for rewards {list(reward.shape)}, '
                         f'got {list(value.shape)}')
    end = end.to(torch.long)
    state = torch.arange(num_states, device=reward.device).expand(batch, num_states).minimum(end[:, None])
    remaining = end[:, None] - state
    steps = torch.where(td_steps < 0, remaining, td_steps.minimum(remaining))
    # discounted prefix sums: prefix[j] = sum_{i<j} discount^i reward[i], so a window's sum is a difference
    powers = discount ** torch.arange(width + 1, device=reward.device, dtype=reward.dtype)
    prefix = torch.cat([reward.new_zeros(batch, 1), (reward * powers[:width]).cumsum(dim=1)], dim=1)
    stop = state + steps
    window = (prefix.gather(1, stop) - prefix.gather(1, state)) / powers[state]
    return window + powers[steps] * value.gather(1, stop)
