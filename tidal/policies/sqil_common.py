"""What every SQIL policy shares, whatever RL it runs on: where its demonstrations come from, and its relabelling.

Reddy et al. 2019, "SQIL: Imitation Learning via Reinforcement Learning with Sparse Rewards" (arXiv 1905.11108).
The 'sqil' feed builds each batch from half the agent's replay and half demonstrations and marks the rows with an
`expert` column; a SQIL policy relabels the rewards from it (algorithm 1, lines 4-5) and learns as its parent does.
"""
from __future__ import annotations

from typing import Any

import torch


class SQILDemonstrations:
    """The config keys of a SQIL policy's demonstrations, which the 'sqil' feed reads."""

    config: dict = dict(
        # (str) Demonstrations: a file written by `tidal collect-demos` (.npz), or a Minari dataset (extra minari),
        # by its id under MINARI_DATASETS_PATH or by its folder; half of every batch comes from it. Given, it wins
        # over collect.model_path where the policy has that key.
        expert_data_path='',
        collect=dict(
            # (str) The same as expert_data_path, under the key DI-engine's offline configs use; set one of the two.
            data_path='',
        ),
    )


def relabel_rewards(batch: dict[str, Any]) -> None:
    """SQIL's rewards, in place: 1 for every demonstration row, 0 for the agent's own (algorithm 1, lines 4-5);
    every step of an n-step window (policy.nstep) comes from the same source as its first."""
    expert = batch['expert'].to(torch.float32)
    batch['reward'] = expert
    if 'nstep_reward' in batch:
        inside = torch.arange(batch['nstep_reward'].shape[1], device=expert.device) < batch['nstep_len'][:, None]
        batch['nstep_reward'] = expert[:, None] * inside


def td_error_by_half(td_error: torch.Tensor, expert: torch.Tensor) -> dict[str, torch.Tensor]:
    """The mean |TD error| of the agent's rows and of the demonstrations (by weights, not boolean indexing, so that
    a seed group's stacked update computes them too)."""
    expert = expert.to(torch.float32)
    return {'agent_td_error': (td_error * (1 - expert)).sum() / (1 - expert).sum(),
            'expert_td_error': (td_error * expert).sum() / expert.sum()}
