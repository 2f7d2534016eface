"""A run's evals.csv: the eval return and, beside it, the mean return of the training episodes that finished
since the previous evaluation."""
import csv
import math

import matplotlib.pyplot as plt
import pytest

from tidal import serial_pipeline_onpolicy
from tidal.base.collector import EpisodeStats
from tidal.worker.evaluator import Evaluator
from tidal.worker.logger import RunLogger
from tidal.worker.plot import curve_figure

# rollouts of 64 env steps over 2 envs, 2 updates each, an evaluation every 2 updates: at the start and after
# every rollout
SHORT = ['env.collector_env_num=2', 'policy.collect.n_sample=64', 'policy.learn.batch_size=32',
         'policy.learn.epoch_per_collect=1', 'policy.eval.evaluator.eval_freq=2', 'env.n_evaluator_episode=1',
         'env.evaluator_env_num=1', 'env.stop_value=null', 'policy.model.encoder_hidden_sizes=[16]']


@pytest.mark.parametrize('zoo_name', ['cartpole_ppo', 'pendulum_ppo'])  # short episodes; 200-step ones
def test_evals_csv_has_the_mean_collect_return_since_the_previous_evaluation(tmp_path, monkeypatch, zoo_name):
    finished: list[float] = []  # the return of every training episode, in the order they finished
    finished_at_eval: list[int] = []  # how many had finished when each evaluation began
    train_logs: list[tuple[int, float]] = []  # (how many had finished, collect_return) of each train log line
    add, evaluate, log = EpisodeStats.add, Evaluator.eval, RunLogger.scalars

    def recording_add(self, done, episode_return, episode_length):
        finished.extend(episode_return[done].tolist())
        add(self, done, episode_return, episode_length)

    def recording_eval(self, *args, **kwargs):
        finished_at_eval.append(len(finished))
        return evaluate(self, *args, **kwargs)

    def recording_log(self, prefix, values, *args):
        if prefix == 'train':
            train_logs.append((len(finished), values.get('collect_return', math.nan)))
        log(self, prefix, values, *args)

    monkeypatch.setattr(EpisodeStats, 'add', recording_add)
    monkeypatch.setattr(Evaluator, 'eval', recording_eval)
    monkeypatch.setattr(RunLogger, 'scalars', recording_log)
    serial_pipeline_onpolicy(zoo_name, seed=0, max_env_step=512, progress=False,
                             overrides=[*SHORT, 'policy.learn.learner.log_freq=3', f'exp_name={tmp_path / "run"}'])

    with open(tmp_path / 'run' / 'evals.csv') as f:
        written = [row['collect_return_mean'] for row in csv.DictReader(f)]
    bounds = [0, *finished_at_eval]
    between = [finished[start:end] for start, end in zip(bounds, bounds[1:])]
    assert len(written) == len(between) == 9  # before the first rollout and after each of the 8
    for value, returns in zip(written, between):
        if returns:
            assert float(value) == pytest.approx(sum(returns) / len(returns), rel=1e-6)
        else:
            assert value == 'nan'
    assert any(len(returns) >= 2 for returns in between)
    # the train log still reports every episode once, between its own lines (every 3 of the 16 updates)
    assert len(train_logs) == 5
    bounds = [0, *(count for count, _ in train_logs)]
    for (start, end), (_, value) in zip(zip(bounds, bounds[1:]), train_logs):
        returns = finished[start:end]
        assert value == pytest.approx(sum(returns) / len(returns)) if returns else math.isnan(value)
    # the run's curve.png draws both
    fig = curve_figure([tmp_path / 'run'])
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ['run (eval)', 'run (collect)']
    plt.close(fig)
    if zoo_name == 'pendulum_ppo':  # both envs end their one episode at 200 steps each (400 in all): one row has them
        assert [len(returns) for returns in between] == [0, 0, 0, 0, 0, 0, 0, 2, 0]
