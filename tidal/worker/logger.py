"""What a run writes about itself: tensorboardX events, a plain-text log and evals.csv."""
from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

from tensorboardX import SummaryWriter

from tidal.worker.plot import EVAL_COLUMNS


class RunLogger:
    """Writes scalars to `<run>/log/` (tensorboardX) and lines to `<run>/log.txt`."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._writer = SummaryWriter(str(self.run_dir / 'log'))
        self._text = open(self.run_dir / 'log.txt', 'a', buffering=1)
        self._evals_path = self.run_dir / 'evals.csv'

    def info(self, message: str) -> None:
        self._text.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {message}\n")

    def scalars(self, prefix: str, values: Mapping[str, float], step: int) -> None:
        for key, value in values.items():
            self._writer.add_scalar(f'{prefix}/{key}', value, step)
        self.info(f'{prefix} @ {step}: ' + ', '.join(f'{k}={v:.4g}' for k, v in values.items()))

    def evaluation(self, row: Mapping[str, float]) -> None:
        """Append one evaluation to evals.csv and to the event file."""
        new = not self._evals_path.exists()
        with open(self._evals_path, 'a', newline='') as f:
            writer = csv.DictWriter(f, fieldnames=EVAL_COLUMNS)
            if new:
                writer.writeheader()
            writer.writerow({key: row[key] for key in EVAL_COLUMNS})
        self.scalars('eval', {k: row[k] for k in ('return_mean', 'return_std', 'episode_length_mean')},
                     int(row['env_step']))

    def summary(self, values: Mapping[str, Any]) -> None:
        with open(self.run_dir / 'summary.json', 'w') as f:
            json.dump(dict(values), f, indent=2)

    def close(self) -> None:
        self._writer.close()
        self._text.close()
