"""Learning curves (eval return, and the collect return beside it, against env steps) as PNG files."""
from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402

from tidal.base.errors import TidalError  # noqa: E402

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


def curve_figure(run_dirs: Sequence[str | os.PathLike], title: str = '') -> Figure:
    """One colour per run against env steps: the mean eval return (solid, with a +-std band) and, where
    evals.csv has it, the mean return of the training episodes between evaluations (dashed). The caller
    closes the figure (`plt.close`)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for run_dir in run_dirs:
        evals = read_evals(run_dir)
        name = Path(run_dir).name
        steps, mean, std = evals['env_step'], evals['return_mean'], evals['return_std']
        collected = [(step, value) for step, value in zip(steps, evals['collect_return_mean']) if math.isfinite(value)]
        line, = ax.plot(steps, mean, label=f'{name} (eval)' if collected else name)
        ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                        color=line.get_color(), alpha=0.2)
        if collected:
            ax.plot([step for step, _ in collected], [value for _, value in collected], linestyle='--',
                    color=line.get_color(), label=f'{name} (collect)')
    ax.set_xlabel('env steps')
    ax.set_ylabel('return')
    ax.set_title(title or ', '.join(Path(r).name for r in run_dirs))
    ax.grid(alpha=0.3)
    ax.legend(loc='best', fontsize='small')
    fig.tight_layout()
    return fig


def plot_curves(run_dirs: Sequence[str | os.PathLike], out: str | os.PathLike, title: str = '') -> Path:
    """`curve_figure` of the runs, saved as a PNG (atomically)."""
    fig = curve_figure(run_dirs, title)
    out = Path(out)
    tmp = out.with_name(f'.{out.stem}.tmp.png')
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)
    return out
