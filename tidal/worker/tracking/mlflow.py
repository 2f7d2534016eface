"""MLflow as a tracking backend (`logger.backends: [mlflow]`, `pip install -e ".[mlflow]"`).

Talks to the store through `MlflowClient` with explicit run ids, never MLflow's one active run per thread: the
seeds of a group (one process) are several open runs at once. The group is the run's `tidal.group` tag.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from mlflow import MlflowClient
from mlflow.entities import Metric, Param
from mlflow.exceptions import MlflowException

from tidal.worker.tracking.tracker import TrackedRun, flat_params

GROUP_TAG = 'tidal.group'
BATCH_PARAMS = 100  # MLflow takes at most this many parameters in one log_batch


class MlflowTracker:
    """An MLflow run in `experiment`: the resolved config as its parameters (dotted keys), the run folder's files as
    its artifacts."""

    name = 'mlflow'

    def __init__(self, run: TrackedRun, tracking_uri: str, experiment: str) -> None:
        """`tracking_uri` '' is MLflow's own choice (MLFLOW_TRACKING_URI, else its default store)."""
        self._client = MlflowClient(tracking_uri or None)
        if run.run_id is not None:
            self.run_id = run.run_id
            self._client.update_run(self.run_id, status='RUNNING')
            return
        created = self._client.create_run(self._experiment_id(experiment), run_name=run.name,
                                          tags={GROUP_TAG: run.group} if run.group else {})
        self.run_id = created.info.run_id
        params = [Param(key, value if isinstance(value, str) else json.dumps(value))
                  for key, value in flat_params(run.config).items()]
        for start in range(0, len(params), BATCH_PARAMS):
            self._client.log_batch(self.run_id, params=params[start:start + BATCH_PARAMS])

    def _experiment_id(self, name: str) -> str:
        found = self._client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self._client.create_experiment(name)
        except MlflowException:  # another process created it in between
            found = self._client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def log(self, values: Mapping[str, float], env_step: int) -> None:
        now = int(time.time() * 1000)
        self._client.log_batch(self.run_id, metrics=[Metric(key, float(value), now, env_step)
                                                     for key, value in values.items()])

    def finish(self, files: Sequence[Path], summary: Mapping[str, Any], ended_well: bool) -> None:
        """The files as artifacts (summary.json among them holds the summary), then the run's status."""
        for path in files:
            self._client.log_artifact(self.run_id, str(path))
        self._client.set_terminated(self.run_id, 'FINISHED' if ended_well else 'FAILED')
