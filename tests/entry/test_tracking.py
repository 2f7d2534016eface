"""logger.backends: W&B (offline) and MLflow (a local SQLite store) get what TensorBoard and evals.csv get, the
resolved config and the run folder's files; a seed group is one group of runs; a resume continues the same run."""
from __future__ import annotations

import csv
import json
import socket
import sys

import pytest

pytest.importorskip('wandb')
pytest.importorskip('mlflow')

from mlflow import MlflowClient  # noqa: E402
from tensorboardX.proto.event_pb2 import Event  # noqa: E402

from wandb_records import offline_run  # noqa: E402  (tests/entry is on sys.path)
from tidal.config import read_config  # noqa: E402
from tidal.config.tree import to_plain  # noqa: E402
from tidal.entry.cli import main  # noqa: E402
from tidal.entry.setup import load_config  # noqa: E402
from tidal.worker.checkpoint import load_checkpoint  # noqa: E402
from tidal.worker.event_files import event_records  # noqa: E402
from tidal.worker.feeds.rollout import RolloutFeed  # noqa: E402
from tidal.worker.tracking.tracker import flat_params  # noqa: E402

SHORT = ['--no-progress', '--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1', '--set',
         'policy.learn.learner.log_freq=10']
ALL = ['--set', 'logger.backends=[tensorboard,wandb,mlflow]']


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    """One SQLite store for the module's runs (making its tables takes seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture(scope='module')
def wandb_dir(tmp_path_factory):
    """One W&B folder for the module's runs: W&B keeps the folder of its first run for the whole process."""
    return tmp_path_factory.mktemp('wandb')


@pytest.fixture
def offline(tmp_path, monkeypatch, store, wandb_dir):
    """W&B offline into the module's folder, MLflow into its store (an experiment per test); run folders in
    tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.setenv('WANDB_DIR', str(wandb_dir))
    monkeypatch.setenv('WANDB_SILENT', 'true')
    return ['--set', f'logger.mlflow.tracking_uri={store}', '--set', f'logger.mlflow.experiment={tmp_path.name}']


def wandb_runs(wandb_dir, name):
    """The offline runs named `name` or '<name>/...', in the order they started."""
    runs = [offline_run(folder) for folder in sorted((wandb_dir / 'wandb').glob('offline-run-*'))]
    return [run for run in runs if run['name'] == name or run['name'].startswith(f'{name}/')]


def mlflow_runs(store, experiment):
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    return client, client.search_runs([found.experiment_id], order_by=['attributes.start_time'])


def tensorboard_scalars(run_dir):
    return sorted((value.tag, event.step, round(value.simple_value, 4))
                  for path in sorted((run_dir / 'log').glob('events.out.tfevents.*'))
                  for event in map(Event.FromString, event_records(path)) for value in event.summary.value)


def mlflow_scalars(client, run_id, names):
    return sorted((name, metric.step, round(metric.value, 4)) for name in names
                  for metric in client.get_metric_history(run_id, name))


def wandb_scalars(run):
    return sorted((name, row['env_step'], round(value, 4)) for row in run['history'] for name, value in row.items()
                  if '/' in name)


def test_every_backend_gets_the_same_scalars_config_and_files(tmp_path, offline, store, wandb_dir):
    assert main(['train', 'cartpole_ppo', '--max-env-step', '600', '--exp-name', 'all', *SHORT, *ALL, *offline]) == 0
    run_dir = tmp_path / 'all'
    scalars = tensorboard_scalars(run_dir)
    names = {name for name, _, _ in scalars}
    assert {'train/total_loss', 'eval/return_mean'} <= names
    with open(run_dir / 'evals.csv') as f:
        eval_steps = [int(row['env_step']) for row in csv.DictReader(f)]
    assert sorted(step for name, step, _ in scalars if name == 'eval/return_mean') == eval_steps

    [wandb_run] = wandb_runs(wandb_dir, 'all')
    assert wandb_scalars(wandb_run) == scalars
    client, [mlflow_run] = mlflow_runs(store, tmp_path.name)
    assert set(mlflow_run.data.metrics) == names
    assert mlflow_scalars(client, mlflow_run.info.run_id, names) == scalars

    config = to_plain(load_config(read_config(str(run_dir / 'config.yaml'))))
    assert {key: wandb_run['config'][key] for key in config} == config
    assert mlflow_run.data.params == {key: value if isinstance(value, str) else json.dumps(value)
                                      for key, value in flat_params(config).items()}
    assert mlflow_run.data.params['policy.type'] == 'ppo' and mlflow_run.data.params['logger.backends'] == \
        '["tensorboard", "wandb", "mlflow"]'

    files = {'curve.png', 'config.yaml', 'summary.json'}
    assert {f'tidal/{name}' for name in files} <= set(wandb_run['files'])
    saved = next((wandb_dir / 'wandb').glob(f"offline-run-*-{wandb_run['id']}")) / 'files' / 'tidal'
    assert (saved / 'config.yaml').read_bytes() == (run_dir / 'config.yaml').read_bytes()
    assert {artifact.path for artifact in client.list_artifacts(mlflow_run.info.run_id)} == files
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert wandb_run['summary']['best_return'] == summary['best_return']
    assert wandb_run['summary']['outcome'] == summary['outcome']
    assert wandb_run['name'] == mlflow_run.info.run_name == 'all' and not wandb_run['group']
    assert mlflow_run.info.status == 'FINISHED'


def test_a_seed_group_tracks_each_seed_as_a_run_of_one_group(tmp_path, offline, store, wandb_dir):
    assert main(['train', 'cartpole_ppo', '--seeds', '2', '--max-env-step', '512', '--exp-name', 'pair',
                 *SHORT, *ALL, *offline]) == 0
    names = ['pair/seed_0', 'pair/seed_1']
    wandb = wandb_runs(wandb_dir, 'pair')
    assert sorted(run['name'] for run in wandb) == names and {run['group'] for run in wandb} == {'pair'}
    assert len({run['id'] for run in wandb}) == 2
    assert sorted(run['config']['seed'] for run in wandb) == [0, 1]
    client, mlflow = mlflow_runs(store, tmp_path.name)
    assert sorted(run.info.run_name for run in mlflow) == names
    assert {run.data.tags['tidal.group'] for run in mlflow} == {'pair'}
    for run in mlflow:
        seed_dir = tmp_path / run.info.run_name
        assert mlflow_scalars(client, run.info.run_id, set(run.data.metrics)) == tensorboard_scalars(seed_dir)


class Crash(Exception):
    """Stands for a kill between two checkpoints."""


def test_a_resumed_run_continues_the_same_tracked_runs(tmp_path, offline, store, wandb_dir, monkeypatch):
    original, calls = RolloutFeed.step, []

    def step(self, env_budget):
        calls.append(1)
        if len(calls) == 4:  # the 4th rollout, at env step 384
            raise Crash
        return original(self, env_budget)
    monkeypatch.setattr(RolloutFeed, 'step', step)
    with pytest.raises(Crash):
        main(['train', 'cartpole_ppo', '--max-env-step', '768', '--exp-name', 'resumed', '--set',
              'policy.collect.n_sample=128', *SHORT, *ALL, *offline])  # killed at env step 384
    monkeypatch.undo()
    checkpoint_step = load_checkpoint(tmp_path / 'resumed' / 'ckpt' / 'latest.pt')['collector']['env_step']
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.setenv('WANDB_DIR', str(wandb_dir))
    assert main(['resume', 'resumed', '--no-progress']) == 0

    killed, resumed = wandb_runs(wandb_dir, 'resumed')
    assert killed['id'] == resumed['id']
    client, [mlflow_run] = mlflow_runs(store, tmp_path.name)  # one run, continued
    assert mlflow_run.info.status == 'FINISHED'
    scalars = tensorboard_scalars(tmp_path / 'resumed')  # each env step once
    tracked = mlflow_scalars(client, mlflow_run.info.run_id, set(mlflow_run.data.metrics))
    assert sorted(set(tracked)) == scalars  # every event; those after the checkpoint and before the kill twice
    repeated = {step for name, step, value in tracked if tracked.count((name, step, value)) > 1}
    assert repeated and checkpoint_step < min(repeated) <= max(repeated) <= 384  # the same values: resumes are exact
    assert sorted(set(wandb_scalars(killed) + wandb_scalars(resumed))) == scalars


def test_a_missing_package_is_one_line_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, 'wandb', None)  # import wandb raises ImportError
    assert main(['train', 'cartpole_ppo', '--max-env-step', '600', *SHORT,
                 '--set', 'logger.backends=[tensorboard,wandb]']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith("tidal: error: logger.backends: 'wandb' needs the wandb package")
    assert err.endswith('install it with: pip install -e ".[wandb]"\n')
    assert not (tmp_path / 'cartpole_ppo').exists()


def test_an_unreachable_tracking_server_is_one_line_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as closed:  # a local port nothing listens on once it is closed
        closed.bind(('127.0.0.1', 0))
        port = closed.getsockname()[1]
    uri = f'http://127.0.0.1:{port}'
    assert main(['train', 'cartpole_ppo', '--max-env-step', '600', *SHORT, '--set',
                 'logger.backends=[mlflow]', '--set', f'logger.mlflow.tracking_uri={uri}']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith(
        f"tidal: error: logger.backends: mlflow's tracking server {uri} (logger.mlflow.tracking_uri) cannot be "
        f"reached: ")
    assert not (tmp_path / 'cartpole_ppo').exists()


def test_an_unknown_backend_is_refused_naming_the_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'cartpole_ppo', '--max-env-step', '600', '--set',
                 'logger.backends=[tensorboard,neptune]']) == 2
    assert capsys.readouterr().err == ("tidal: error: config key 'logger.backends[1]' must be in {'tensorboard', "
                                       "'wandb', 'mlflow'}, got 'neptune'\n")


def test_without_tensorboard_no_event_file_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(['train', 'cartpole_ppo', '--max-env-step', '600', *SHORT, '--set', 'logger.backends=[]']) == 0
    assert not (tmp_path / 'cartpole_ppo' / 'log').exists() and (tmp_path / 'cartpole_ppo' / 'evals.csv').is_file()
