"""n-step windows for the off-policy feed (`policy.nstep`): a sampled transition extended by the ones after it.

Each sampled transition starts a window of up to n steps of the same env: the steps `stride` rows apart in the
replay (the collector's rows are step-major), while the episode goes on and the replay still holds them. The
window closes after a step that ended its episode (terminated or truncated) and at the newest transition held,
so it never crosses an episode's end. The batch keeps the window's rewards, zero past its end, as
`nstep_reward` [B, n, ...] and its length as `nstep_len` [B]; `next_obs` and `terminated` become those of its
last step. A policy folds them into R = sum_k gamma^k r_k and the discount gamma^len of its bootstrap
(`tidal.rl_utils.nstep_return`): a window ended by termination does not bootstrap, one ended by truncation or
by the newest data bootstraps from its last step's true next observation.
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.worker.replay_buffer import ReplayBuffer


def extend_to_nstep(buffer: ReplayBuffer, batch: dict[str, Any], n: int, stride: int) -> dict[str, Any]:
    """`batch` (single transitions sampled from `buffer`, with their 'index') as n-step windows."""
    index = batch['index']
    slots, held = buffer.following(index, n, stride)  # [B, n] each
    steps = buffer.gather(slots.reshape(-1), ('reward', 'terminated', 'truncated'))
    size = index.shape[0]
    ended = (steps['terminated'] | steps['truncated']).reshape(size, n)
    # step k is in the window when it is held and no earlier step of the window ended its episode
    ended_before = torch.cumsum(ended.long(), dim=1) - ended.long()
    inside = held & (ended_before == 0)
    length = inside.long().sum(dim=1)  # >= 1: the sampled step itself
    last = slots.gather(1, (length - 1)[:, None]).squeeze(1)
    end = buffer.gather(last, ('next_obs', 'terminated'))
    reward = steps['reward'].reshape(size, n, *steps['reward'].shape[1:])
    mask = inside.reshape(size, n, *([1] * (reward.dim() - 2)))
    return {**batch, 'next_obs': end['next_obs'], 'terminated': end['terminated'],
            'nstep_reward': torch.where(mask, reward, torch.zeros_like(reward)), 'nstep_len': length}
