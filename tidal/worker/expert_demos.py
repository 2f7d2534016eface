"""Demonstrations recorded by an expert policy: for `tidal collect-demos`, and for a SQIL run whose
`policy.collect.model_path` names the expert's checkpoint (DI-engine's way of giving SQIL its expert)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import torch
from easydict import EasyDict

from tidal.base.errors import CheckpointError, TidalError
from tidal.base.policy import PolicyLike
from tidal.config.layered import load_layered
from tidal.envs.env_manager import EnvManager
from tidal.worker.builders import build_env_manager, build_policy
from tidal.worker.checkpoint import load_policy_checkpoint
from tidal.worker.collector import EpisodeCollector
from tidal.worker.demos import Demos, as_demos, first_mismatch, recording_mode
from tidal.worker.rng import rng_state, set_rng_state, stream_seed
from tidal.worker.run_groups import run_checkpoint

_MODEL_PATH = 'policy.collect.model_path'


def record_episodes(cfg: EasyDict, policy: PolicyLike, episodes: int, seed: int, deterministic: bool = True,
                    manager: Optional[EnvManager] = None, random: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(episodes, metadata): `episodes` whole episodes of `policy` on the collector envs of `cfg` (or on `manager`'s,
    which its owner closes), seeded by `seed`; deterministic: its eval-mode action, else it samples as collection
    does; `random`: uniformly random actions (its collect mode's warm-up actions) instead."""
    acting = recording_mode(policy.collect_mode, policy.eval_mode, deterministic)
    envs = build_env_manager(cfg, 'collector') if manager is None else manager
    try:
        collector = EpisodeCollector(envs, acting, policy.device)
        collector.reset(seed=stream_seed(seed))
        rollouts = collector.collect(episodes, random=random)
    finally:
        if manager is None:
            envs.close()
    metadata = dict(
        env_id=cfg.env.env_id, env_kwargs=dict(cfg.env.env_kwargs),
        observation_space=str(envs.observation_space), action_space=str(envs.action_space),
        obs_shape=cfg.policy.model.obs_shape, action_shape=cfg.policy.model.action_shape,
        deterministic=deterministic, seed=seed, returns=[float(episode['reward'].sum()) for episode in rollouts])
    return rollouts, metadata


def returns_summary(returns: Sequence[float]) -> str:
    """'mean return M (min A, max B)' of recorded episodes: a weak or erratic expert shows at once."""
    return f'mean return {sum(returns) / len(returns):.2f} (min {min(returns):.2f}, max {max(returns):.2f})'


def demos_from_checkpoint(cfg: EasyDict, device: torch.device) -> Demos:
    """The demonstrations of the expert at `policy.collect.model_path` (a checkpoint or its run folder, whose
    config.yaml builds the expert): `policy.collect.expert_episodes` episodes of its eval-mode actions on the
    collector envs of `cfg`, seeded by `cfg.seed` as `tidal collect-demos -s SEED` seeds them. The global random
    generators come back as they were, so the run goes on as if the demonstrations had been read from a file."""
    path = cfg.policy.collect.model_path
    try:
        run_dir, ckpt = run_checkpoint(Path(path), _MODEL_PATH)
    except TidalError as err:
        raise type(err)(f'{_MODEL_PATH}: {err}') from None
    saved = rng_state()
    try:
        # the expert acts on this run's device, whatever device it was trained on
        expert = load_layered(str(run_dir / 'config.yaml'), cfg.seed,
                              [f'policy.device={device}', 'policy.cuda=False']).cfg
        _check_expert_fits(expert, cfg, path)
        policy = build_policy(expert, enable_field=('collect', 'eval'))
        load_policy_checkpoint(policy, ckpt)
        episodes, metadata = record_episodes(cfg, policy, cfg.policy.collect.expert_episodes, cfg.seed)
    finally:
        set_rng_state(saved)
    returns = metadata['returns']
    print(f"tidal: recorded {len(returns)} expert episodes from '{ckpt}' ({_MODEL_PATH}), {returns_summary(returns)}",
          flush=True)
    return as_demos(episodes, dict(metadata, policy=expert.policy.type, checkpoint=str(ckpt)))


def _check_expert_fits(expert: EasyDict, cfg: EasyDict, path: str) -> None:
    """Refuse an expert trained on another env, or with other observation or action shapes, in one line."""
    model = cfg.policy.model
    recorded = {**expert.policy.model, 'env_id': expert.env.get('env_id')}
    key = first_mismatch(recorded, cfg.env.get('env_id'), model.get('obs_shape'), model.get('action_shape'))
    if key == 'env_id':
        raise CheckpointError(f"{_MODEL_PATH} '{path}' is an expert of env '{recorded['env_id']}', but "
                              f"env.env_id is '{cfg.env.get('env_id')}'")
    if key is not None:
        raise CheckpointError(f"{_MODEL_PATH} '{path}' is an expert with policy.model.{key} {recorded[key]}, but "
                              f"this run's is {model.get(key)}")
