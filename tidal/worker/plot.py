"""Learning curves (eval return against env steps) as PNG files."""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from tidal.base.errors import TidalError  # noqa: E402

EVAL_COLUMNS = ('env_step', 'train_iter', 'wall_time', 'return_mean', 'return_std', 'episode_length_mean')


def read_evals(run_dir: str | os.PathLike) -> dict[str, list[float]]:
    """Columns of a run's `evals.csv`."""
    path = Path(run_dir) / 'evals.csv'
    if not path.is_file():
        raise TidalError(f"'{run_dir}' has no evals.csv: is it a tidal run folder?")
    with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
    return {key: [float(row[key]) for row in rows] for key in EVAL_COLUMNS}


def plot_curves(run_dirs: Sequence[str | os.PathLike], out: str | os.PathLike, title: str = '') -> Path:
    """One line per run (mean eval return with a +-std band) against env steps, saved as a PNG."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for run_dir in run_dirs:
        evals = read_evals(run_dir)
        steps, mean, std = evals['env_step'], evals['return_mean'], evals['return_std']
        line, = ax.plot(steps, mean, label=Path(run_dir).name)
        ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                        color=line.get_color(), alpha=0.2)
    ax.set_xlabel('env steps')
    ax.set_ylabel('eval return')
    ax.set_title(title or ', '.join(Path(r).name for r in run_dirs))
    ax.grid(alpha=0.3)
    ax.legend(loc='best', fontsize='small')
    fig.tight_layout()
    out = Path(out)
    tmp = out.with_name(f'.{out.stem}.tmp.png')
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)
    return out
