"""A D4RL-like suite of datasets for one env, built from tidal's own runs (`tidal build-datasets`).

D4RL made its locomotion datasets from SAC runs, and Minari's `mujoco/*` datasets follow it; without the internet
they cannot be downloaded, so this builds the same five levels locally, as Minari datasets named as Minari names
its own (`mujoco/hopper/medium-v0`), each carrying the reference returns of D4RL's normalised score:

- `random`: uniformly random actions; their mean return is the score's 0 (`ref_min_score`);
- `expert`: the config trained for the whole budget (or to its stop value), or a finished run given as the expert
  (`--expert-run`), sampling as collection does; its last
  evaluation's mean return (the eval-mode action, as offline runs are evaluated) is the score's 100
  (`ref_max_score`);
- `medium`: the same config and seed stopped at its first evaluation that reaches a third of the way from random to
  expert (D4RL's "about a third of the expert"), sampling; the run is the expert run's own beginning, bit for bit;
- `medium-replay`: that medium run's replay buffer, every transition it collected;
- `medium-expert`: the medium and expert episodes together.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from tidal.base.errors import CheckpointError, ConfigError
from tidal.entry.pipelines import train
from tidal.entry.result import read_eval_rows
from tidal.entry.setup import ConfigInput, load_config
from tidal.worker.builders import build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_checkpoint, load_policy_checkpoint
from tidal.worker.expert_demos import record_episodes, returns_summary
from tidal.worker.offline_data import replay_episodes

LEVELS = ('random', 'medium', 'medium-replay', 'expert', 'medium-expert')
MEDIUM_FRACTION = 1 / 3  # of the way from the random policy's return to the expert's


def build_datasets(input_cfg: ConfigInput, max_env_step: Optional[int], transitions: int, prefix: Optional[str] = None,
                   seed: Optional[int] = None, overrides: Iterable[str] = (), runs_dir: Optional[str | os.PathLike] = None,
                   progress: bool = True, expert_run: Optional[str | os.PathLike] = None) -> dict[str, Path]:
    """Train the expert and medium runs of `input_cfg` under `runs_dir`, record `transitions` transitions (whole
    episodes, the last one kept whole) of each level and write the five datasets `<prefix>/<level>-v0`; returns
    their folders by level. `expert_run`: a finished run folder to take as the expert instead of training one (its
    own config and seed make the medium run)."""
    import minari  # the extra 'minari'
    from minari.storage.datasets_root_dir import get_dataset_path

    overrides = list(overrides)
    if expert_run is not None:
        input_cfg, max_env_step = _finished_run(Path(expert_run))
    if max_env_step is None:
        raise ConfigError('give the expert run\'s budget (--max-env-step), or a finished expert run (--expert-run)')
    cfg = load_config(input_cfg, seed, overrides)
    prefix = prefix or default_prefix(cfg.env.env_id)
    ids = {level: f'{prefix}/{level}-v0' for level in LEVELS}
    taken = [dataset_id for dataset_id in ids.values() if get_dataset_path(dataset_id).exists()]
    if taken:
        raise ConfigError(f"dataset '{taken[0]}' exists already under Minari's root '{get_dataset_path()}' "
                          f"(MINARI_DATASETS_PATH): remove it or give another --prefix")
    runs = Path(runs_dir or f'{prefix.replace("/", "_")}_runs')
    seed = cfg.seed
    expert_dir = Path(expert_run) if expert_run is not None else runs / 'expert'
    if expert_run is None:
        train(input_cfg, seed, max_env_step, None, [*overrides, f'exp_name={expert_dir}'], progress)
    episodes = {'random': _record(cfg, None, transitions, seed, 'random')}
    episodes['expert'] = _record(cfg, expert_dir, transitions, seed + 1, 'expert')
    # the expert's return as evaluations measure it (its eval-mode action), the measure of the medium run's stop
    low, high = _mean_return(episodes['random']), _last_eval_return(expert_dir)
    if not high > low:
        raise CheckpointError(f"the expert run '{expert_dir}' returns {high:.2f}, no more than random actions "
                              f"({low:.2f}): train it longer (--max-env-step)")
    target = low + MEDIUM_FRACTION * (high - low)
    train(input_cfg, seed, max_env_step, None,
          [*overrides, f'exp_name={runs / "medium"}', f'env.stop_value={target}'], progress)
    episodes['medium'] = _record(cfg, runs / 'medium', transitions, seed + 2, 'medium')
    episodes['medium-replay'] = replay_episodes(runs / 'medium' / 'ckpt' / 'latest.pt',
                                                cfg.env.collector_env_num)
    episodes['medium-expert'] = episodes['medium'] + episodes['expert']
    from tidal.worker.minari_datasets import save_episodes
    folders = {}
    for level in LEVELS:
        folders[level] = save_episodes(
            ids[level], episodes[level], cfg.env, (low, high),
            f"D4RL-style '{level}' data of {cfg.env.env_id}, built by tidal build-datasets from {cfg.policy.type} runs "
            f"(random return {low:.2f}, expert return {high:.2f})")
        print(f"tidal: {ids[level]}: {len(episodes[level])} episodes, "
              f"{sum(len(e['reward']) for e in episodes[level])} transitions, "
              f"{returns_summary([float(e['reward'].sum()) for e in episodes[level]])}", flush=True)
    del minari
    return folders


def _finished_run(run_dir: Path) -> tuple[str, int]:
    """(config file, env steps) of a run that ended: the expert `--expert-run` names."""
    summary = run_dir / 'summary.json'
    if not (run_dir / 'config.yaml').is_file() or not summary.is_file():
        raise ConfigError(f"--expert-run '{run_dir}' is not a tidal run folder (config.yaml and summary.json)")
    env_step = json.loads(summary.read_text()).get('env_step')
    if not env_step:
        raise ConfigError(f"--expert-run '{run_dir}' has not ended yet (its summary.json has no env steps)")
    return str(run_dir / 'config.yaml'), int(env_step)


def _last_eval_return(run_dir: Path) -> float:
    """The mean return of a run's last evaluation."""
    rows = read_eval_rows(run_dir)
    if not rows:
        raise CheckpointError(f"the expert run '{run_dir}' has no evaluation")
    return float(rows[-1]['return_mean'])


def default_prefix(env_id: str) -> str:
    """'mujoco/hopper' for Hopper-v5 (Minari's MuJoCo namespace), else 'tidal/pendulum' for Pendulum-v1."""
    name = env_id.split('/')[-1].rsplit('-v', 1)[0].lower()
    mujoco = {'hopper', 'halfcheetah', 'walker2d', 'ant', 'humanoid', 'swimmer', 'reacher', 'pusher',
              'invertedpendulum', 'inverteddoublependulum', 'humanoidstandup'}
    return f"{'mujoco' if name in mujoco else 'tidal'}/{name}"


def _record(cfg: Any, run_dir: Optional[Path], transitions: int, seed: int, what: str) -> list[dict[str, Any]]:
    """Whole episodes of the run's latest policy sampling as collection does (random actions for None) until they
    hold at least `transitions` transitions."""
    if run_dir is not None:
        cfg = load_config(str(run_dir / 'config.yaml'))
    configure_torch(cfg)
    set_seed(seed)
    policy = build_policy(cfg, enable_field=('collect', 'eval'))
    if run_dir is not None:
        checkpoint = run_dir / 'ckpt' / 'latest.pt'
        load_policy_checkpoint(policy, checkpoint)
        # the run's exploration where it stopped (an epsilon decayed over its env steps), not a fresh one's
        policy.collect_mode.load_state_dict(load_checkpoint(checkpoint)['collector']['policy'])
    episodes: list[dict[str, Any]] = []
    held, chunk = 0, 0
    while held < transitions:
        # a first chunk of 10 episodes measures their length; then about what is missing, with a tenth more
        count = 10 if not episodes else max(1, int(1.1 * (transitions - held) * len(episodes) / held) + 1)
        recorded, _ = record_episodes(cfg, policy, count, seed * 1000 + chunk, deterministic=False,
                                      random=run_dir is None)
        for episode in recorded:
            if held < transitions:
                episodes.append(episode)
                held += len(episode['reward'])
        chunk += 1
    print(f"tidal: recorded {len(episodes)} {what} episodes ({held} transitions), "
          f"{returns_summary([float(e['reward'].sum()) for e in episodes])}", flush=True)
    return episodes


def _mean_return(episodes: list[dict[str, Any]]) -> float:
    return float(np.mean([float(episode['reward'].sum()) for episode in episodes]))
