"""Weights & Biases as a tracking backend (`logger.backends: [wandb]`, `pip install -e ".[wandb]"`).

Each run is a W&B run of its own, opened with `reinit='create_new'`, so the seeds of a group (one process) are
several open runs at once. Every scalar is drawn against `env_step` rather than W&B's own step, which counts
calls and refuses to go back: a run resumed after a kill logs again env steps the killed process had logged.
"""
from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, cast

import wandb

from tidal.worker.tracking.tracker import TrackedRun

#: The run folder's files go under this folder of the W&B run's files (whose config.yaml is W&B's own).
FILES_DIR = 'tidal'


class WandbTracker:
    """A W&B run: the resolved config as its config, the run's seed group as its group."""

    name = 'wandb'

    def __init__(self, run: TrackedRun, project: str, entity: str, mode: Literal['', 'online', 'offline']) -> None:
        """`entity` '' is the account's default; `mode` '' leaves it to W&B (WANDB_MODE, else online)."""
        resuming = run.run_id is not None
        # WANDB_MODE and WANDB_DIR read at each run: W&B reads its environment once per process, so a second run
        # in the same process (a notebook, a tune study) would otherwise keep the first one's
        self._run = wandb.init(project=project, entity=entity or None, name=run.name, group=run.group,
                               id=run.run_id, resume='allow' if resuming else None,
                               mode=cast(Any, mode or os.environ.get('WANDB_MODE') or None),  # W&B checks it
                               dir=os.environ.get('WANDB_DIR') or None,
                               config=None if resuming else dict(run.config), reinit='create_new',
                               # the console is tidal's (tqdm's bar, the seeds' runs at once); quiet: no summary table
                               settings=wandb.Settings(console='off', quiet=True))
        self.run_id: str = self._run.id
        self._run.define_metric('env_step')
        self._run.define_metric('*', step_metric='env_step')

    def log(self, values: Mapping[str, float], env_step: int) -> None:
        self._run.log({'env_step': env_step, **values})

    def finish(self, files: Sequence[Path], summary: Mapping[str, Any], ended_well: bool) -> None:
        """Copies of the files (the run folder may move before `wandb sync`), the summary's numbers and words."""
        folder = Path(self._run.dir) / FILES_DIR
        folder.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, folder / path.name)
            self._run.save(str(folder / path.name), base_path=self._run.dir, policy='now')
        self._run.summary.update({key: value for key, value in summary.items() if isinstance(value, str)
                                  or (isinstance(value, (int, float)) and math.isfinite(value))})
        self._run.finish(exit_code=0 if ended_well else 1)
