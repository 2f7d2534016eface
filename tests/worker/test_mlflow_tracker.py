"""The MLflow backend with no tracking URI named keeps its store in the run folder, says nothing on the terminal and
writes nothing into the working directory; a URI the user names wins."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip('mlflow')

import mlflow  # noqa: E402
from mlflow import MlflowClient  # noqa: E402

from tidal.worker.tracking.mlflow import MlflowTracker, tracking_store  # noqa: E402
from tidal.worker.tracking.tracker import TrackedRun  # noqa: E402


@pytest.fixture
def no_uri(tmp_path, monkeypatch):
    """A working directory of its own, and no tracking URI given to MLflow."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('MLFLOW_TRACKING_URI', raising=False)
    assert not mlflow.is_tracking_uri_set()
    return tmp_path


def test_run_without_uri_keeps_store_and_artifacts_in_run_folder_and_prints_no_info_line(no_uri, capfd):
    run_dir = Path('cartpole_ppo')
    run_dir.mkdir()
    (run_dir / 'summary.json').write_text('{}')
    tracker = MlflowTracker(TrackedRun('cartpole_ppo', None, {'seed': 0}, run_dir), '', 'tidal')
    tracker.log({'eval/return_mean': 9.5}, env_step=100)
    tracker.finish([run_dir / 'summary.json'], {}, ended_well=True)

    assert sorted(path.name for path in no_uri.iterdir()) == ['cartpole_ppo']  # no mlflow.db, no mlruns/
    assert 'INFO' not in capfd.readouterr().err
    client = MlflowClient(f'sqlite:///{run_dir}/mlflow/mlflow.db')  # as docs/tracking.md opens it
    [stored] = client.search_runs([client.get_experiment_by_name('tidal').experiment_id])
    assert stored.info.run_name == 'cartpole_ppo' and stored.info.status == 'FINISHED'
    assert [(m.step, m.value) for m in client.get_metric_history(tracker.run_id, 'eval/return_mean')] == [(100, 9.5)]
    assert (run_dir / 'mlflow' / 'artifacts' / tracker.run_id / 'artifacts' / 'summary.json').is_file()


def test_seeds_of_a_group_share_the_group_folders_store(no_uri):
    run = TrackedRun('pair/seed_1', 'pair', {}, Path('pair') / 'seed_1')
    store = no_uri / 'pair' / 'mlflow'
    assert tracking_store(run, '') == (f'sqlite:///{store}/mlflow.db', store / 'artifacts')


def test_a_named_uri_wins_over_the_run_folders_store(no_uri, monkeypatch):
    run = TrackedRun('cartpole_ppo', None, {}, Path('cartpole_ppo'))
    assert tracking_store(run, 'sqlite:///shared.db') == ('sqlite:///shared.db', None)
    monkeypatch.setenv('MLFLOW_TRACKING_URI', 'http://localhost:5000')
    assert tracking_store(run, '') == (None, None)  # the client reads MLFLOW_TRACKING_URI itself
