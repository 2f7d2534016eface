"""A seed group's aggregate: the summary of its seeds' returns and the line that says how the group ended."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

from tidal.entry.run import Run
from tidal.rl_utils.stats import iqm, iqm_ci, median
from tidal.worker.run_groups import read_group, seed_folder

AGGREGATE_DIR = 'aggregate'


def group_end_line(group_dir: Path, summary: dict[str, Any]) -> str:
    """How the group ended, in one line naming its folder and aggregate curve (each seed has said its own)."""
    seeds = len(summary['seeds'])
    returns = (f"last eval return median {summary['last_return_median']:.2f}, IQM {summary['last_return_iqm']:.2f}"
               if 'last_return_median' in summary else 'no evaluation')
    aggregate = group_dir / AGGREGATE_DIR
    return (f"group of {seeds} seeds ended; {returns}; group folder {group_dir} ({aggregate / 'curve.png'}, "
            f"{aggregate / 'summary.json'})")


def group_summary(group_dir: Path, wall_time: float, steps_made: int, runs: Sequence[Run] = ()) -> dict[str, Any]:
    """The group's summary over every seed of group.json: `runs` (those trained in this process) as they stand,
    the others (trained by other processes, or ended before a resume) from their folder's summary.json;
    `steps_made` env steps were made in `wall_time` seconds."""
    entries: dict[int, Optional[dict[str, Any]]] = {
        run.cfg.seed: {'seed': run.cfg.seed, 'run_dir': str(run.run_dir.relative_to(group_dir)),
                       'env_step': run.env_step, 'train_iter': run.learner.train_iter,
                       'last_return': run.evaluation.last_return, 'best_return': _finite(run.evaluation.best_return)}
        for run in runs}
    order = read_group(group_dir)['seeds']
    for seed in order:
        if seed not in entries:
            entries[seed] = _ended_seed(group_dir, seed)
    seeds = sorted((entry for entry in entries.values() if entry is not None),
                   key=lambda entry: order.index(entry['seed']))
    summary: dict[str, Any] = {'seeds': seeds, 'wall_time': wall_time,
                               'env_steps_per_s': steps_made / wall_time if wall_time else 0.0}
    finals = [seed['last_return'] for seed in seeds if seed['last_return'] is not None]
    if finals:
        summary.update(last_return_median=median(finals), last_return_iqm=iqm(finals))
        if len(finals) >= 2:
            interval = iqm_ci(finals)
            summary['last_return_iqm_ci95'] = [interval.low, interval.high]
    return summary


def _ended_seed(group_dir: Path, seed: int) -> Optional[dict[str, Any]]:
    """A seed's entry read back from its run's summary.json; None if it has none readable."""
    run_dir = seed_folder(group_dir, seed)
    try:
        own = json.loads((run_dir / 'summary.json').read_text())
    except (OSError, ValueError):
        return None
    return {'seed': seed, 'run_dir': run_dir.name, 'env_step': own.get('env_step'),
            'train_iter': own.get('train_iter'), 'last_return': own.get('last_return'),
            'best_return': _finite(own.get('best_return'))}


def _finite(value: Optional[float]) -> Optional[float]:
    """A best return, None before the first evaluation (-inf)."""
    return None if value is None or value == -float('inf') else value
