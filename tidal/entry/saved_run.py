"""A trained run as the tools that act with it read it (`tidal export`, `tidal.load`): its saved config set to act
as its eval mode does, its policy holding a checkpoint's weights, and what its env gives and takes."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import gymnasium
from easydict import EasyDict

from tidal.config import read_config
from tidal.entry.policy import build_policy
from tidal.entry.setup import load_config
from tidal.envs.action_bounds import ActionBounds, action_bounds
from tidal.policies.base import Policy
from tidal.registry import ENV_REGISTRY
from tidal.worker.checkpoint import load_policy_checkpoint
from tidal.worker.run_groups import run_checkpoint


@dataclass(frozen=True)
class SavedRun:
    run_dir: Path
    checkpoint: Path
    cfg: EasyDict


def saved_run(source: str | os.PathLike, command: str, device: str = 'cpu') -> SavedRun:
    """The run of a run folder (its ckpt/best.pt, else ckpt/latest.pt) or of a checkpoint file inside one, its saved
    config acting deterministically on `device`, its envs stepped in this process; `command` names the caller in
    the one-line refusals of a path that is neither."""
    run_dir, checkpoint = run_checkpoint(Path(source), command)
    cfg = load_config(read_config(str(run_dir / 'config.yaml')))
    cfg.policy.update(device=device, cuda=False)
    cfg.policy.eval.deterministic = True
    cfg.env_manager.type = 'base'
    return SavedRun(run_dir, checkpoint, cfg)


def saved_policy(run: SavedRun) -> Policy:
    """The run's policy, its eval mode alone, holding the checkpoint's weights (read with weights_only)."""
    policy = build_policy(run.cfg, enable_field=('eval',))
    load_policy_checkpoint(policy, run.checkpoint)
    return policy


@dataclass(frozen=True)
class EnvInterface:
    """What one of the run's envs gives the policy, and how the env adapter maps the policy's action to the env's
    (None: actions reach the env as the policy gives them, discrete or unbounded)."""

    observation_space: gymnasium.Space
    bounds: Optional[ActionBounds]


def env_interface(cfg: EasyDict) -> EnvInterface:
    """Read off one evaluator env of the config, made and closed."""
    env = ENV_REGISTRY.build(cfg.env.type, cfg.env).make('evaluator')
    try:
        return EnvInterface(env.observation_space, action_bounds(env))
    finally:
        env.close()
