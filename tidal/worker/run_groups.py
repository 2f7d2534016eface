"""Which run folders are seeds of one config, so that a plot can aggregate them into one curve.

The rule: two runs are seeds of one config when their `config.yaml` files are identical apart from
`main_config.exp_name` (the folder) and `main_config.seed`. A run without a config.yaml is a group of
its own. Groups keep the order in which their first run was given.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml

from tidal.base.errors import CheckpointError, TidalError
from tidal.base.files import write_text_atomic

#: main_config keys that differ between the seeds of one config.
PER_SEED_KEYS = ('exp_name', 'seed')
#: The file that marks a seed group's folder (`tidal train --seeds`): its seeds and budget.
GROUP_FILE = 'group.json'


def seed_folder(group_dir: Path, seed: int) -> Path:
    """The run folder of one seed in a seed group's folder."""
    return group_dir / f'seed_{seed}'


def read_group(group_dir: Path) -> dict:
    """A seed group's group.json: its seeds and budget (max_env_step, max_train_iter)."""
    return json.loads((group_dir / GROUP_FILE).read_text())


def write_group(group_dir: Path, spec: dict) -> None:
    """Write a seed group's group.json atomically: a group resumed with a new budget keeps its old one until the
    new one is whole."""
    write_text_atomic(group_dir / GROUP_FILE, json.dumps(spec, indent=2) + '\n')


def run_checkpoint(source: Path, command: str = 'export') -> tuple[Path, Path]:
    """(run folder, checkpoint) of a run folder (its ckpt/best.pt, else ckpt/latest.pt) or of a checkpoint file
    inside one; `command` names what needs it in the one-line refusals."""
    if source.is_dir():
        if (source / GROUP_FILE).is_file():
            raise TidalError(f"'{source}' is a seed group's folder: {command} one seed's run, e.g. "
                             f"{next(iter(sorted(source.glob('seed_*'))), seed_folder(source, 0))}")
        if not (source / 'config.yaml').is_file():
            raise TidalError(f"'{source}' is not a tidal run folder (it has no config.yaml)")
        for name in ('best.pt', 'latest.pt'):
            if (source / 'ckpt' / name).is_file():
                return source, source / 'ckpt' / name
        raise CheckpointError(f"run folder '{source}' has no checkpoint (ckpt/best.pt or ckpt/latest.pt)")
    if source.is_file():
        for folder in source.resolve().parents:
            if (folder / 'config.yaml').is_file():
                return folder, source
        raise TidalError(f"no config.yaml in the folders above checkpoint '{source}': {command} needs the run "
                         f"folder it was trained in")
    raise TidalError(f"'{source}' is neither a run folder nor a checkpoint file")


def checkpoint_file(source: str | os.PathLike, command: str) -> Path:
    """The checkpoint `source` names: a run folder's (as `run_checkpoint` picks it), else the file as given, whose
    config comes from elsewhere (CONFIG on the command line)."""
    path = Path(source)
    return run_checkpoint(path, command)[1] if path.is_dir() else path


def expand_seed_groups(run_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    """The run folders, with a seed group's folder replaced by its seeds' folders (those that evaluated)."""
    expanded: list[Path] = []
    for run_dir in map(Path, run_dirs):
        if (run_dir / GROUP_FILE).is_file():
            seeds = read_group(run_dir)['seeds']
            expanded += [seed_folder(run_dir, seed) for seed in seeds
                         if (seed_folder(run_dir, seed) / 'evals.csv').is_file()]
        else:
            expanded.append(run_dir)
    return expanded


@dataclass(frozen=True)
class RunGroup:
    """Run folders that differ only by their seed, and the name a plot gives them; `left_out` holds the runs of
    a seed the group already counts (a seed run twice counts once: its first run given)."""
    label: str
    run_dirs: tuple[Path, ...]
    left_out: tuple[Path, ...] = ()


def _saved_config(run_dir: Path) -> dict | None:
    """The run's config.yaml as a mapping; None without one."""
    path = run_dir / 'config.yaml'
    if not path.is_file():
        return None
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise TidalError(f"'{path}' is not readable YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(config, dict):
        raise TidalError(f"'{path}' holds no config (a mapping with main_config)")
    return config


def config_identity(config: dict) -> str:
    """A run's saved config without its per-seed keys, as canonical JSON: equal for the seeds of one config."""
    main = dict(config.get('main_config') or {})
    for key in PER_SEED_KEYS:
        main.pop(key, None)
    return json.dumps({**config, 'main_config': main}, sort_keys=True, default=str)


def group_label(run_dirs: Sequence[Path]) -> str:
    """The folder names' common start without a trailing seed (`hopper_sac` for hopper_sac_seed0 and
    hopper_sac_seed1, or for hopper_sac_s0 and hopper_sac_s1); the common parent folder's name when the
    names share nothing else (exp/seed0, exp/seed1, or a seed group's seed_0, seed_1); else the first
    folder's name."""
    names = [run_dir.name for run_dir in run_dirs]
    if len(names) == 1:
        return names[0]
    label = re.sub(r'(^|[_\-. ])(seed|s)?[_\-. ]?$', '', os.path.commonprefix(names).rstrip('0123456789'))
    parents = {run_dir.resolve().parent.name for run_dir in run_dirs}
    if not label and len(parents) == 1:
        label = parents.pop()
    return label or names[0]


def group_runs(run_dirs: Sequence[str | os.PathLike]) -> list[RunGroup]:
    """The runs split into groups of seeds of one config (see the module docstring for the rule); a folder
    given twice counts once, and a second run of a seed the group has is left out of it (`left_out`)."""
    members: dict[str, list[Path]] = {}
    repeats: dict[str, list[Path]] = {}
    seeds: dict[str, set] = {}
    seen: set[Path] = set()
    for index, run_dir in enumerate(map(Path, run_dirs)):
        if run_dir.resolve() in seen:
            continue
        seen.add(run_dir.resolve())
        config = _saved_config(run_dir)  # read once: its identity and its seed
        key = config_identity(config) if config is not None else f'#run {index}'
        seed = (config.get('main_config') or {}).get('seed') if config is not None else None
        counted = seeds.setdefault(key, set())
        if seed is not None and seed in counted:
            repeats.setdefault(key, []).append(run_dir)
            continue
        counted.add(seed)
        members.setdefault(key, []).append(run_dir)
    return [RunGroup(group_label(runs), tuple(runs), tuple(repeats.get(key, ()))) for key, runs in members.items()]
