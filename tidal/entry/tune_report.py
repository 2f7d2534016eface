"""What a study leaves in its folder: `best.yaml` (the best trial's resolved config, runnable by `tidal
train`), `trials.csv` (one row per trial) and `importance.png` (Optuna's parameter importances)."""
from __future__ import annotations

import csv
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from tidal.config import save_config
from tidal.config.layered import load_layered
from tidal.entry.tune_trial import TuneSetup

if TYPE_CHECKING:
    import optuna


def trial_reason(trial: 'optuna.trial.FrozenTrial') -> str:
    """Why a trial failed or was pruned, in one line ('' otherwise)."""
    return str(trial.user_attrs.get('fail_reason') or trial.user_attrs.get('pruned') or '')


def write_best(study: 'optuna.Study', setup: TuneSetup, exp_name: str) -> Optional[Path]:
    """best.yaml: the config of the best complete trial, compiled again through the loader, as the seed-0 run of
    that trial had it but for its run folder (`<exp_name>_tuned`); None while no trial is complete."""
    try:
        best = study.best_trial
    except ValueError:  # no complete trial yet
        return None
    overrides = [*setup.overrides, *best.user_attrs['overrides'], f'exp_name={exp_name}_tuned']
    resolved = load_layered(setup.config_input, setup.base_seed, overrides)
    path = setup.study_dir / 'best.yaml'
    save_config(resolved.cfg, path, (*resolved.sources, f'tidal tune: trial {best.number}, objective {best.value:.6g}'))
    return path


def write_table(study: 'optuna.Study', path: Path) -> Path:
    """trials.csv: number, state, value, one column per parameter, seconds, and the reason of a failure."""
    trials = study.get_trials(deepcopy=False)
    keys = list(dict.fromkeys(key for trial in trials for key in trial.params))
    rows: list[list[Any]] = [['number', 'state', 'value', *keys, 'seconds', 'reason']]
    for trial in trials:
        seconds = trial.duration.total_seconds() if trial.duration is not None else ''
        value = '' if trial.value is None else f'{trial.value:.6g}'
        rows.append([trial.number, trial.state.name, value, *(trial.params.get(key, '') for key in keys),
                     f'{seconds:.1f}' if seconds != '' else '', trial_reason(trial)])
    _write_atomic(path, rows)
    return path


def _write_atomic(path: Path, rows: list[list[Any]]) -> None:
    """The table in full or not at all: a study read while it runs never shows half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        with os.fdopen(fd, 'w', newline='', encoding='utf-8') as file:
            csv.writer(file).writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# Below this many complete trials importance.png says it is a rough guide. Measured on 40 synthetic studies of 5
# uniform parameters, one carrying most of the objective's variance: fANOVA ranked that one first in 3 of 10
# studies of 5 trials (chance is 2 of 10), half of those of 10 trials, 6 of 10 of 20 trials and 8 of 10 of 30.
ROUGH_BELOW_TRIALS = 10


def importance_title(study_name: str, complete: int) -> str:
    """The figure's title: the study and how many complete trials the importances come from."""
    rough = ': a rough guide' if complete < ROUGH_BELOW_TRIALS else ''
    return f"{study_name}: from {complete} complete trial{'s' if complete != 1 else ''}{rough}"


def write_importance(study: 'optuna.Study', path: Path) -> str:
    """importance.png from Optuna's parameter importances; returns a line saying what was written, or why not."""
    import optuna
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(complete) < 2:
        return f'no importance plot: it needs 2 complete trials, the study has {len(complete)}'
    try:
        importances = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError) as err:  # e.g. every trial drew the same values
        return f"no importance plot: Optuna's importances failed ({' '.join(str(err).split())})"
    if not importances or not all(math.isfinite(value) for value in importances.values()):
        return 'no importance plot: no parameter varied over the complete trials'
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = list(importances)[::-1]  # the most important at the top
    figure, axes = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    axes.barh(names, [importances[name] for name in names], color='tab:blue')
    axes.set_xlabel('importance (fANOVA, sums to 1)')
    axes.set_title(importance_title(study.study_name, len(complete)))
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    if len(complete) < ROUGH_BELOW_TRIALS:
        return f'importance plot {path} (from {len(complete)} complete trials: a rough guide)'
    return f'importance plot {path}'
