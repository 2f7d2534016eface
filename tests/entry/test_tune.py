"""`tidal tune`: trials are normal runs with the user's checks, pruned on their evaluations, recorded in a SQLite
study that a second `tidal tune` continues (after a kill too); best.yaml, trials.csv and the objective."""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from tidal.base.errors import ConfigError, TidalError
from tidal.config.layered import load_layered
from tidal.entry.cli import main
from tidal.entry.tune import tune
from tidal.entry.tune_trial import TuneSetup, aggregate_seeds, run_trial, seed_score

# rollouts of 64 env steps on 2 envs, one epoch each; an evaluation every 128 env steps (2 short episodes)
TINY = ('policy.collect.n_sample=64', 'env.collector_env_num=2', 'policy.learn.epoch_per_collect=1',
        'policy.eval.evaluator.eval_freq_env_steps=128', 'env.n_evaluator_episode=2', 'env.evaluator_env_num=2')
BUDGET = 128
ROOT = Path(__file__).resolve().parents[2]


def _table(study_dir: Path) -> list[dict[str, str]]:
    with open(study_dir / 'trials.csv', newline='') as file:
        return list(csv.DictReader(file))


def _space(tmp_path: Path, text: str) -> Path:
    path = tmp_path / 'space.yaml'
    path.write_text(text)
    return path


def test_three_trials_are_run_folders_reported_to_the_pruner_with_a_table_and_a_runnable_best_yaml(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = tune('cartpole_ppo', trials=3, budget_env_steps=BUDGET, overrides=TINY)
    study_dir = tmp_path / 'tune' / 'cartpole_ppo'  # the default study folder: tune/<exp_name>
    assert isinstance(study.pruner, optuna.pruners.MedianPruner)
    assert [trial.state for trial in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    for trial in study.trials:
        run_dir = study_dir / f'trial_{trial.number:04d}' / 'seed_0'
        assert {'config.yaml', 'evals.csv', 'ckpt', 'log.txt'} <= {path.name for path in run_dir.iterdir()}
        with open(run_dir / 'evals.csv', newline='') as file:
            rows = list(csv.DictReader(file))
        returns = [float(row['return_mean']) for row in rows]
        # every evaluation reported the running score (the mean of the last 3 returns) at its env step
        assert sorted(trial.intermediate_values) == [int(row['env_step']) for row in rows] == [0, 128]
        assert trial.intermediate_values[0] == returns[0]
        assert trial.intermediate_values[128] == pytest.approx((returns[0] + returns[1]) / 2)
        assert trial.value == pytest.approx((returns[0] + returns[1]) / 2)
        # keys pinned by --set are not searched; the family's other keys are
        assert 'policy.collect.n_sample' not in trial.params and 'policy.learn.learning_rate' in trial.params
    assert [row['state'] for row in _table(study_dir)] == ['COMPLETE'] * 3
    assert (study_dir / 'importance.png').is_file()
    best = study.best_trial
    cfg = load_layered(str(study_dir / 'best.yaml')).cfg  # the loader's full checks, as tidal train runs it
    assert cfg.policy.learn.learning_rate == best.params['policy.learn.learning_rate']
    assert cfg.policy.collect.n_sample == 64 and cfg.exp_name == 'cartpole_ppo_tuned'


def test_a_new_study_first_tries_the_configs_own_values_and_samples_keys_outside_the_space(tmp_path):
    space = _space(tmp_path, 'policy.learn.learning_rate: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}\n'
                             'policy.learn.clip_ratio: {type: float, low: 0.25, high: 0.4}\n'
                             'policy.model.encoder_hidden_sizes: {type: categorical, choices: [[64, 64], [32]]}\n')
    study = tune('cartpole_ppo', trials=1, budget_env_steps=BUDGET, overrides=TINY, space=space,
                 study_dir=tmp_path / 'study')
    params = study.trials[0].params
    # cartpole_ppo's learning rate 1e-3 and [64, 64] lie in the space; its clip ratio 0.2 does not
    assert params['policy.learn.learning_rate'] == 1e-3
    assert params['policy.model.encoder_hidden_sizes'] == '[64, 64]'
    assert 0.25 <= params['policy.learn.clip_ratio'] <= 0.4


def test_every_evaluation_of_every_seed_reaches_the_pruner_at_its_own_step(tmp_path):
    setup = TuneSetup('cartpole_ppo', TINY, (), seeds=2, base_seed=0, budget_env_steps=BUDGET,
                      study_dir=tmp_path)
    study = optuna.create_study(direction='maximize', pruner=optuna.pruners.NopPruner())
    run_trial(study.ask(), setup)
    # seed 0 evaluates at env steps 0 and 128, seed 1 at 0 and 128 again: its steps follow seed 0's
    assert sorted(study.trials[0].intermediate_values) == [0, BUDGET, BUDGET + 1, 2 * BUDGET + 1]


def test_two_worker_processes_share_the_study_and_start_exactly_the_trials_asked_for(tmp_path):
    study = tune('cartpole_ppo', trials=3, jobs=2, budget_env_steps=BUDGET, overrides=TINY,
                 study_dir=tmp_path / 'study')
    assert [trial.state for trial in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    assert sorted(path.name for path in (tmp_path / 'study').glob('trial_*')) == [
        'trial_0000', 'trial_0001', 'trial_0002']
    assert [row['state'] for row in _table(tmp_path / 'study')] == ['COMPLETE'] * 3
    assert study.trials[0].params['policy.learn.learning_rate'] == 1e-3  # the config's own values first
    assert not list((tmp_path / 'study').glob('*.lock'))  # the study's locks go with it


def test_a_trial_the_pruner_stops_ends_its_run_and_starts_no_other_seed(tmp_path):
    class AlwaysPrune(optuna.pruners.BasePruner):
        def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
            return True

    setup = TuneSetup('cartpole_ppo', TINY, (), seeds=2, base_seed=0, budget_env_steps=BUDGET,
                      study_dir=tmp_path)
    trial = optuna.create_study(direction='maximize', pruner=AlwaysPrune()).ask()
    with pytest.raises(optuna.TrialPruned, match='pruned at env step 0 of seed 0'):
        run_trial(trial, setup)
    seed_dir = tmp_path / 'trial_0000' / 'seed_0'
    assert len((seed_dir / 'evals.csv').read_text().splitlines()) == 2  # the header and the first evaluation
    assert 'stopped by TrialPruned' in (seed_dir / 'summary.json').read_text()
    assert not (tmp_path / 'trial_0000' / 'seed_1').exists()


def test_a_sampled_value_a_key_refuses_fails_that_trial_with_its_reason_and_the_study_goes_on(tmp_path):
    space = _space(tmp_path, 'policy.collect.discount_factor: {type: categorical, choices: [0.99, 1.5]}\n'
                             'policy.learn.learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}\n')
    study = tune('cartpole_ppo', trials=4, budget_env_steps=BUDGET, overrides=TINY, space=space,
                 study_dir=tmp_path / 'study')
    rows = _table(tmp_path / 'study')
    assert len(rows) == 4
    assert {row['policy.collect.discount_factor'] for row in rows} == {'0.99', '1.5'}
    for row in rows:
        if row['policy.collect.discount_factor'] == '1.5':
            assert (row['state'], row['reason']) == (
                'FAIL', "config key 'policy.collect.discount_factor' must be in [0, 1], got 1.5")
            assert not (tmp_path / 'study' / f"trial_{int(row['number']):04d}").exists()
        else:
            assert row['state'] == 'COMPLETE' and row['reason'] == ''
    assert study.best_trial.params['policy.collect.discount_factor'] == 0.99


def test_a_killed_study_continues_failing_the_killed_trial_and_keeping_finished_ones(tmp_path):
    space = _space(tmp_path, 'policy.learn.learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}\n')
    study_dir = tmp_path / 'study'
    args = ['tune', 'cartpole_ppo', '--trials', '3', '--budget-env-steps', str(BUDGET), '--space', str(space),
            '--study-dir', str(study_dir), *(arg for text in TINY for arg in ('--set', text))]
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))}
    process = subprocess.Popen([sys.executable, '-m', 'tidal', *args], cwd=tmp_path, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    try:
        while not (study_dir / 'trial_0001').exists():  # trial 0 ended, trial 1 started: kill it there
            assert process.poll() is None and time.monotonic() < deadline, 'the study ended before trial 1'
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    first = optuna.load_study(study_name='study', storage=f"sqlite:///{study_dir / 'study.db'}")
    assert [trial.state.name for trial in first.trials] == ['COMPLETE', 'RUNNING']
    finished = first.trials[0]

    study = tune('cartpole_ppo', trials=3, budget_env_steps=BUDGET, overrides=TINY, space=space,
                 study_dir=study_dir)
    assert [trial.state.name for trial in study.trials] == ['COMPLETE', 'FAIL', 'COMPLETE']
    assert study.trials[0].datetime_complete == finished.datetime_complete  # not run again
    assert study.trials[1].user_attrs['fail_reason'] == 'interrupted: the tidal tune process running it stopped'
    assert study.trials[2].params == study.trials[1].params  # the killed trial's values, tried again
    assert sorted(path.name for path in study_dir.glob('trial_*')) == ['trial_0000', 'trial_0001', 'trial_0002']
    with pytest.raises(ConfigError, match=r"study 'study' was run with seeds 1, not 2: continue it with the same"):
        tune('cartpole_ppo', trials=4, seeds=2, budget_env_steps=BUDGET, overrides=TINY, space=space,
             study_dir=study_dir)


@pytest.mark.parametrize('text, message', [
    ('- policy.learn.learning_rate\n',
     "search space '{path}' must map config keys to ranges, e.g. policy.learn.learning_rate: "
     "{{type: float, low: 1.0e-5, high: 1.0e-2, log: true}}"),
    ('policy.learn.learning_rate: {type: flaot, low: 0.1, high: 1}\n',
     "search space '{path}', key 'policy.learn.learning_rate': type must be one of float, int, categorical, "
     "got 'flaot'"),
    ('policy.learn.learning_rate: {type: float, low: 0, high: 0.1, log: true}\n',
     "search space '{path}', key 'policy.learn.learning_rate': log needs low > 0, got 0"),
    ('policy.learn.epoch_per_collect: {type: int, low: 10, high: 3}\n',
     "search space '{path}', key 'policy.learn.epoch_per_collect': low 10 > high 3"),
    ('policy.learn.epoch_per_collect: {type: int, low: 1.5, high: 3}\n',
     "search space '{path}', key 'policy.learn.epoch_per_collect': low must be an integer, got 1.5"),
    ('policy.collect.n_sample: {type: categorical, choices: []}\n',
     "search space '{path}', key 'policy.collect.n_sample': choices must be a non-empty list, got []"),
    ('policy.collect.n_sample: {type: categorical, values: [1, 2]}\n',
     "search space '{path}', key 'policy.collect.n_sample': unknown field 'values' for type categorical "
     "(fields: choices, type)"),
    ('policy.learn.learning_rat: {type: float, low: 1.0e-4, high: 1.0e-3}\n',
     "search space '{path}': unknown config key 'policy.learn.learning_rat'; did you mean "
     "'policy.learn.learning_rate' or 'policy.learn.learner'?"),
])
def test_a_bad_space_file_is_one_line_naming_the_file_and_the_key(tmp_path, capsys, text, message):
    space = _space(tmp_path, text)
    code = main(['tune', 'cartpole_ppo', '--trials', '1', '--budget-env-steps', '128', '--space', str(space),
                 '--study-dir', str(tmp_path / 'study')])
    assert code == 2
    assert capsys.readouterr().err == f'tidal: error: {message.format(path=space)}\n'
    assert not (tmp_path / 'study').exists()


def test_a_policy_without_a_search_space_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"^tidal tune has no search space for policy 'muzero'; give one with "
                                          r"--space FILE \(families with a space: a2c, ddpg, discrete_sac, dqn, "
                                          r"ppg, ppo, "):
        tune('cartpole_muzero', trials=1, budget_env_steps=1000, study_dir=tmp_path)


def test_a_spent_timeout_starts_no_trial_and_says_there_is_no_best_config(tmp_path, capsys):
    study = tune('cartpole_ppo', trials=3, budget_env_steps=BUDGET, overrides=TINY, timeout_s=1e-9,
                 study_dir=tmp_path / 'study')
    assert study.trials == []
    assert 'tidal tune: no complete trial, so no best.yaml\n' in capsys.readouterr().out
    assert _table(tmp_path / 'study') == [] and not (tmp_path / 'study' / 'best.yaml').exists()


def test_without_optuna_tune_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'optuna', None)
    with pytest.raises(TidalError, match=r'^tidal tune needs optuna: pip install -e "\.\[tune\]"$'):
        tune('cartpole_ppo', trials=1, study_dir=tmp_path)


def test_seed_score_is_the_mean_of_the_last_three_evals_or_the_final_one_at_the_stop_value():
    assert seed_score([0.0, 10.0, 20.0, 30.0, 60.0]) == 110 / 3
    assert seed_score([5.0, 7.0]) == 6.0
    assert seed_score([10.0, 200.0, 500.0], stopped_at_stop_value=True) == 500.0
    with pytest.raises(TidalError, match='the run made no evaluation'):
        seed_score([])


def test_trial_value_is_the_mean_of_seeds_below_four_and_their_iqm_from_four():
    assert aggregate_seeds([100.0]) == 100.0
    assert aggregate_seeds([1.0, 2.0, 6.0]) == 3.0
    assert aggregate_seeds([0.0, 10.0, 20.0, 1000.0]) == 15.0  # the lowest and highest of 4 dropped
    assert aggregate_seeds([8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]) == 4.5  # the middle 4 of 8
    with pytest.raises(TidalError, match='must be finite'):
        aggregate_seeds([1.0, float('nan')])
