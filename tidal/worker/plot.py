"""Learning curves (eval return, and the collect return beside it, against env steps) as PNG files.

Runs that are seeds of one config (see `run_groups`) are drawn as one curve: the interquartile mean
of their eval returns at each env step with its 95% stratified-bootstrap confidence band.
"""
from __future__ import annotations

import csv
import gc
import math
import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402

import numpy as np  # noqa: E402

from tidal.base.errors import TidalError  # noqa: E402
from tidal.rl_utils.stats import iqm_ci  # noqa: E402
from tidal.worker.run_groups import RunGroup, expand_seed_groups, group_runs  # noqa: E402

#: The columns of `evals.csv`. collect_return_mean is the mean return of the training episodes finished since
#: the previous evaluation ('nan' where none finished).
EVAL_COLUMNS = ('env_step', 'train_iter', 'wall_time', 'return_mean', 'return_std', 'episode_length_mean',
                'collect_return_mean')
#: Columns that files written before they existed lack: read as NaN there.
LATER_COLUMNS = ('collect_return_mean',)


def read_evals(run_dir: str | os.PathLike) -> dict[str, list[float]]:
    """Columns of a run's `evals.csv`."""
    path = Path(run_dir) / 'evals.csv'
    if not path.is_file():
        raise TidalError(f"'{run_dir}' has no evals.csv: is it a tidal run folder?")
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = reader.fieldnames or []
    missing = [key for key in EVAL_COLUMNS if key not in header and key not in LATER_COLUMNS]
    if missing:
        raise TidalError(f"'{path}' lacks the columns {', '.join(missing)}: is it a tidal run's evals.csv?")
    return {key: [float(row[key]) if key in header else math.nan for row in rows] for key in EVAL_COLUMNS}


def clock_column(evals: Sequence[Mapping[str, list[float]]]) -> str:
    """The column curves are drawn against: env steps, or train iterations where every run learnt offline (its
    env steps all 0)."""
    offline = all(not any(e['env_step']) for e in evals) and any(any(e['train_iter']) for e in evals)
    return 'train_iter' if offline else 'env_step'


def seed_curve(run_dirs: Sequence[str | os.PathLike], confidence: float = 0.95, replicates: int = 2000,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(env steps, or train iterations offline; IQM, CI low, CI high) of the seeds' eval returns.

    The curve spans the env steps every seed reached (from the latest first evaluation to the earliest
    last one), on the union of the seeds' evaluation steps there; a seed without an evaluation at one
    of those steps is interpolated linearly between its neighbours, so seeds that evaluated on the
    same grid enter with their own values only.
    """
    evals = [read_evals(run_dir) for run_dir in run_dirs]
    return _seed_curve(run_dirs, evals, clock_column(evals), confidence, replicates, seed)


def _seed_curve(run_dirs: Sequence[str | os.PathLike], evals: Sequence[Mapping[str, list[float]]], clock: str,
                confidence: float = 0.95, replicates: int = 2000,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`seed_curve` of the runs' evaluations read already, against the column `clock`."""
    empty = [str(run_dir) for run_dir, e in zip(run_dirs, evals) if not e['env_step']]
    if empty:
        raise TidalError(f"'{empty[0]}' has no evaluations yet: nothing to plot")
    start = max(e[clock][0] for e in evals)
    end = min(e[clock][-1] for e in evals)
    steps = np.unique([step for e in evals for step in e[clock] if start <= step <= end])
    returns = np.stack([np.interp(steps, e[clock], e['return_mean']) for e in evals])  # [seeds, steps]
    intervals = [iqm_ci(returns[:, i], confidence, replicates, seed) for i in range(len(steps))]
    return (steps, np.array([c.point for c in intervals]), np.array([c.low for c in intervals]),
            np.array([c.high for c in intervals]))


def _draw_run(ax: plt.Axes, run_dir: Path, evals: Mapping[str, list[float]], clock: str) -> None:
    """One run: its mean eval return with a +-std band, and the collect return dashed where recorded."""
    name = run_dir.name
    steps, mean, std = evals[clock], evals['return_mean'], evals['return_std']
    collected = [(step, value) for step, value in zip(steps, evals['collect_return_mean']) if math.isfinite(value)]
    line, = ax.plot(steps, mean, label=f'{name} (eval)' if collected else name)
    ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                    color=line.get_color(), alpha=0.2)
    if collected:
        ax.plot([step for step, _ in collected], [value for _, value in collected], linestyle='--',
                color=line.get_color(), label=f'{name} (collect)')


def _draw_group(ax: plt.Axes, group: RunGroup, evals: Sequence[Mapping[str, list[float]]], clock: str) -> None:
    """Seeds of one config: the IQM of their eval returns with its 95% bootstrap band."""
    steps, middle, low, high = _seed_curve(group.run_dirs, evals, clock)
    line, = ax.plot(steps, middle, label=f'{group.label} (IQM of {len(group.run_dirs)} seeds, 95% CI)')
    ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2)


def curve_groups(run_dirs: Sequence[str | os.PathLike], per_run: bool = False) -> list[RunGroup]:
    """The curves a plot of `run_dirs` draws, one group of runs each: a seed group's folder stands for its seeds,
    the seeds of one config make one curve, and `per_run` makes every run a curve of its own."""
    run_dirs = expand_seed_groups(run_dirs)
    return [RunGroup(Path(r).name, (Path(r),)) for r in run_dirs] if per_run else group_runs(run_dirs)


def curve_figure(run_dirs: Sequence[str | os.PathLike], title: str = '', per_run: bool = False) -> Figure:
    """Eval return against env steps, one colour per curve. Seeds of one config make one curve (their
    IQM with a 95% confidence band); a run alone is drawn with its +-std band over eval episodes and,
    where evals.csv has it, the mean return of the training episodes between evaluations (dashed).
    `per_run` draws every run alone. The caller closes the figure (`plt.close`)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    groups = curve_groups(run_dirs, per_run)
    evals = {run_dir: read_evals(run_dir) for group in groups for run_dir in group.run_dirs}
    clock = clock_column(list(evals.values()))  # one axis for every curve of the figure
    for group in groups:
        for repeat in group.left_out:
            print(f"tidal: '{repeat}' repeats a seed that '{group.label}' already counts; left out of its curve",
                  file=sys.stderr)
        if len(group.run_dirs) == 1:
            _draw_run(ax, group.run_dirs[0], evals[group.run_dirs[0]], clock)
        else:
            _draw_group(ax, group, [evals[run_dir] for run_dir in group.run_dirs], clock)
    ax.set_xlabel('train iterations' if clock == 'train_iter' else 'env steps')
    ax.set_ylabel('return')
    ax.set_title(title or ', '.join(group.label for group in groups))
    ax.grid(alpha=0.3)
    ax.legend(loc='best', fontsize='small')
    # fixed margins that fit the labels of any return's scale: tight_layout measures every label first, which
    # doubled the cost of drawing a run's curve (the fixed cost of every short run)
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.12, top=0.92)
    return fig


def plot_curves(run_dirs: Sequence[str | os.PathLike], out: str | os.PathLike, title: str = '',
                per_run: bool = False) -> Path:
    """`curve_figure` of the runs, saved as a PNG (atomically).

    A figure is a web of reference cycles: closed, it waits for a full garbage collection, which a process holding
    a few hundred thousand objects (a run's, with torch) makes only every few dozen figures, each about 2 MB; a run
    redrawing its curve at every evaluation grew by that much. Drawn with the collector paused, the figure's
    objects stay in the youngest generation, whose collection alone (milliseconds) frees them once it is closed."""
    out = Path(out)
    tmp = out.with_name(f'.{out.stem}.tmp.png')
    enabled = gc.isenabled()
    gc.disable()
    try:
        _save_figure(run_dirs, tmp, title, per_run)
    finally:
        if enabled:
            gc.enable()
    gc.collect(0)
    os.replace(tmp, out)
    return out


def _save_figure(run_dirs: Sequence[str | os.PathLike], path: Path, title: str, per_run: bool) -> None:
    """Draw, save and close the figure; it is unreachable once this returns."""
    fig = curve_figure(run_dirs, title, per_run)
    fig.savefig(path, dpi=100)
    plt.close(fig)
