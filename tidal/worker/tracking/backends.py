"""`logger.backends`: checking the named tracking services before a run starts, and opening their runs.

TensorBoard is the run logger's own (its event files resume exactly); W&B and MLflow are extras, imported only
when named. The check says in one line what is missing: the package to install, or the server that does not
answer.
"""
from __future__ import annotations

import importlib
import os
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Optional

from tidal.base.errors import ConfigError, TidalError, first_line
from tidal.config.tree import to_plain
from tidal.worker.run_groups import GROUP_FILE
from tidal.worker.tracking.tracker import TrackedRun, Tracker

BACKENDS = ('tensorboard', 'wandb', 'mlflow')
REACH_SECS = 5.0  # how long the check waits for an http(s) tracking server


def backends(cfg: Mapping[str, Any]) -> list[str]:
    """The config's `logger.backends` (a config without a logger section: tensorboard alone)."""
    return list((cfg.get('logger') or {}).get('backends', ['tensorboard']))


def check_backends(cfg: Mapping[str, Any]) -> None:
    """Refuse, in one line, a named backend whose package does not import or whose tracking server does not
    answer; before anything of the run is built."""
    for name in backends(cfg):
        if name not in BACKENDS:
            raise ConfigError(f"logger.backends: unknown backend '{name}'; choose from {', '.join(BACKENDS)}")
        if name == 'tensorboard':
            continue
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ConfigError(f"logger.backends: '{name}' needs the {name} package, which cannot be imported "
                              f"({err}); install it with: pip install -e \".[{name}]\"") from None
        if name == 'mlflow':
            _check_reachable(cfg['logger']['mlflow']['tracking_uri'])


def _check_reachable(tracking_uri: str) -> None:
    """An http(s) tracking server must answer (any HTTP status will do); local stores need no check."""
    key = 'logger.mlflow.tracking_uri'
    if not tracking_uri:
        tracking_uri, key = os.environ.get('MLFLOW_TRACKING_URI', ''), 'MLFLOW_TRACKING_URI'
    if not tracking_uri.startswith(('http://', 'https://')):
        return
    try:
        with urllib.request.urlopen(tracking_uri, timeout=REACH_SECS):
            pass
    except urllib.error.HTTPError:
        pass  # it answered
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, 'reason', err)
        raise ConfigError(f"logger.backends: mlflow's tracking server {tracking_uri} ({key}) cannot be reached: "
                          f"{reason}; start it, or track to a local store (sqlite:///mlflow.db)") from None


def tracked_run(cfg: Mapping[str, Any], run_dir: Path) -> TrackedRun:
    """The run's name (its folder; '<group>/seed_<k>' for a seed of a group) and group (the group's folder)."""
    group_dir = run_dir.parent
    in_group = (group_dir / GROUP_FILE).is_file()
    name = f'{group_dir.name}/{run_dir.name}' if in_group else run_dir.name
    return TrackedRun(name=name, group=group_dir.name if in_group else None, config=to_plain(cfg), run_dir=run_dir)


def open_trackers(cfg: Mapping[str, Any], run_dir: Path,
                  resume_from: Optional[Mapping[str, Any]] = None) -> list[Tracker]:
    """The runs of the tracking services `logger.backends` names, continuing those whose ids the checkpoint kept
    (`resume_from`: its log position); a service that fails to open its run stops the run in one line."""
    run = tracked_run(cfg, run_dir)
    run_ids = dict((resume_from or {}).get('tracking', {}))
    opened: list[Tracker] = []
    for name in backends(cfg):
        if name == 'tensorboard':
            continue
        options = cfg['logger'][name]
        try:
            opened.append(_open(name, replace(run, run_id=run_ids.get(name)), options))
        except Exception as err:
            for tracker in opened:
                tracker.finish([], {}, ended_well=False)
            raise TidalError(f"logger.backends: {name} could not open its run '{run.name}': {first_line(err)}") from err
    return opened


def _open(name: str, run: TrackedRun, options: Mapping[str, Any]) -> Tracker:
    if name == 'wandb':
        from tidal.worker.tracking.wandb import WandbTracker
        return WandbTracker(run, options['project'], options['entity'], options['mode'])
    from tidal.worker.tracking.mlflow import MlflowTracker
    return MlflowTracker(run, options['tracking_uri'], options['experiment'])
