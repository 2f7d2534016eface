"""importance.png and its report line say when the importances come from too few trials to be more than a rough
guide."""
from __future__ import annotations

import pytest

optuna = pytest.importorskip('optuna')

from tidal.entry.tune_report import ROUGH_BELOW_TRIALS, importance_title, write_importance  # noqa: E402

SPACE = {'lr': optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
         'batch_size': optuna.distributions.IntDistribution(32, 256)}


def _study(trials: int) -> 'optuna.Study':
    """A study of `trials` complete trials whose value rises with the learning rate."""
    study = optuna.create_study(study_name='cartpole_ppo', direction='maximize')
    for number in range(trials):
        lr, batch_size = 1e-4 * 1.5 ** number, 32 + (number * 37) % 225
        study.add_trial(optuna.trial.create_trial(params={'lr': lr, 'batch_size': batch_size}, distributions=SPACE,
                                                  value=1000 * lr))
    return study


def test_the_title_of_a_few_trials_says_rough_guide_and_of_many_does_not():
    assert importance_title('cartpole_ppo', 2) == 'cartpole_ppo: from 2 complete trials: a rough guide'
    assert importance_title('cartpole_ppo', ROUGH_BELOW_TRIALS - 1).endswith(': a rough guide')
    assert importance_title('cartpole_ppo', ROUGH_BELOW_TRIALS) == \
        f'cartpole_ppo: from {ROUGH_BELOW_TRIALS} complete trials'


def test_the_report_line_of_two_trials_says_rough_guide(tmp_path):
    path = tmp_path / 'importance.png'
    assert write_importance(_study(2), path) == f'importance plot {path} (from 2 complete trials: a rough guide)'
    assert path.is_file()


def test_the_report_line_of_many_trials_names_the_plot_alone(tmp_path):
    path = tmp_path / 'importance.png'
    assert write_importance(_study(12), path) == f'importance plot {path}'
    assert path.is_file()
