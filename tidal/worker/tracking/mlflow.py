"""MLflow as a tracking backend (`logger.backends: [mlflow]`, `pip install -e ".[mlflow]"`).

Talks to the store through `MlflowClient` with explicit run ids, never MLflow's one active run per thread: the
seeds of a group (one process) are several open runs at once. The group is the run's `tidal.group` tag.

With no tracking URI named (`logger.mlflow.tracking_uri`, MLFLOW_TRACKING_URI, `mlflow.set_tracking_uri`), the
store is a SQLite file in the run's folder (a seed group's: the group's folder), its artifacts beside it: MLflow's
own default would put `mlflow.db` and `mlruns/` in the working directory.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, ContextManager, Iterator, Mapping, Optional, Sequence

from mlflow import MlflowClient
from mlflow.entities import Metric, Param
from mlflow.exceptions import MlflowException
from mlflow.tracking import is_tracking_uri_set

from tidal.base.files import locked
from tidal.worker.tracking.tracker import TrackedRun, flat_params

GROUP_TAG = 'tidal.group'
BATCH_PARAMS = 100  # MLflow takes at most this many parameters in one log_batch
STORE_DIR = 'mlflow'  # the default store's folder: mlflow.db and artifacts/


def store_dir(run: TrackedRun) -> Path:
    """Where the default store of `run` lives: in its folder, or in its group's folder, so that the seeds of a group
    share one store."""
    return (run.run_dir.parent if run.group else run.run_dir) / STORE_DIR


def tracking_store(run: TrackedRun, tracking_uri: str) -> tuple[Optional[str], Optional[Path]]:
    """The URI the client opens (None: the one MLflow was given) and, for the run folder's store, where its
    artifacts go (else None: the store's choice)."""
    if tracking_uri or is_tracking_uri_set():
        return tracking_uri or None, None
    folder = store_dir(run).resolve()
    return f'sqlite:///{folder / "mlflow.db"}', folder / 'artifacts'


@contextmanager
def _quiet() -> Iterator[None]:
    """MLflow's INFO lines (making a new store's tables, a server's link to the run) kept off the terminal; its
    warnings still show."""
    logger = logging.getLogger('mlflow')
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _store_lock(folder: Optional[Path]) -> ContextManager[None]:
    """The run folder's store to this process alone for the block: the processes of a seed group share one store,
    and two making its tables at once fail ('table ... already exists'). No lock for a store of MLflow's choice
    (a server orders its own clients) or where there is no `fcntl` (Windows)."""
    if folder is None or importlib.util.find_spec('fcntl') is None:
        return nullcontext()
    return locked(folder / '.lock')


class MlflowTracker:
    """An MLflow run in `experiment`: the resolved config as its parameters (dotted keys), the run folder's files as
    its artifacts."""

    name = 'mlflow'

    def __init__(self, run: TrackedRun, tracking_uri: str, experiment: str) -> None:
        """`tracking_uri` '' is the URI MLflow was given (MLFLOW_TRACKING_URI), else the run folder's store."""
        uri, artifacts = tracking_store(run, tracking_uri)
        if artifacts is not None:
            artifacts.parent.mkdir(parents=True, exist_ok=True)
        with _quiet(), _store_lock(artifacts.parent if artifacts is not None else None):
            self._client = MlflowClient(uri)
            if run.run_id is not None:
                self.run_id = run.run_id
                self._client.update_run(self.run_id, status='RUNNING')
                return
            experiment_id = self._experiment_id(experiment, artifacts)
            created = self._client.create_run(experiment_id, run_name=run.name,
                                              tags={GROUP_TAG: run.group} if run.group else {})
            self.run_id = created.info.run_id
            params = [Param(key, value if isinstance(value, str) else json.dumps(value))
                      for key, value in flat_params(run.config).items()]
            for start in range(0, len(params), BATCH_PARAMS):
                self._client.log_batch(self.run_id, params=params[start:start + BATCH_PARAMS])

    def _experiment_id(self, name: str, artifacts: Optional[Path]) -> str:
        """The id of experiment `name`, made if missing (its artifacts under `artifacts`; None: the store's choice)."""
        found = self._client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self._client.create_experiment(name, artifact_location=str(artifacts) if artifacts else None)
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
        with _quiet():
            for path in files:
                self._client.log_artifact(self.run_id, str(path))
            self._client.set_terminated(self.run_id, 'FINISHED' if ended_well else 'FAILED')
