"""One trial of `tidal tune`: its config from the sampled values, one normal run per seed, its score.

The objective of a trial is the score of each seed, aggregated over the seeds (`aggregate_seeds`). A seed's
score (`seed_score`) is the mean eval return of its last `SCORE_WINDOW` evaluations: less noisy than the
final one alone, and still about where the run ended. While the seeds run one after another, each
evaluation reports the score so far to Optuna's pruner, which may stop the trial.
"""
from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from tidal.base.errors import TidalError
from tidal.config.tree import MISSING, value_at
from tidal.config.layered import ConfigInput, load_layered
from tidal.config.search_space import Param, SearchSpace
from tidal.config.yaml_io import format_scalar
from tidal.entry.pipelines import start_run
from tidal.rl_utils.stats import iqm

if TYPE_CHECKING:
    import optuna

#: Evaluations at the end of a run that its score averages.
SCORE_WINDOW = 3
#: From this many seeds on, a trial's value is their interquartile mean rather than their mean.
IQM_FROM_SEEDS = 4
#: Step distance between the intermediate values of consecutive seeds when runs have no env-step budget.
_UNBUDGETED_STRIDE = 10 ** 12


@dataclass(frozen=True)
class TuneSetup:
    """What every trial of a study shares (picklable: worker processes receive it)."""

    config_input: ConfigInput
    overrides: tuple[str, ...]
    space: SearchSpace
    seeds: int
    base_seed: int
    budget_env_steps: Optional[int]
    study_dir: Path
    #: the config's own values of the searched keys that lie in the space: a new study's first trial
    start: dict[str, Any] = field(default_factory=dict)

    def run_overrides(self, sampled: Sequence[str], run_dir: Path) -> list[str]:
        """The `--set` overrides of one run: the user's, then the trial's values, then its folder."""
        return [*self.overrides, *sampled, f'exp_name={run_dir}']


def seed_score(returns: Sequence[float], stopped_at_stop_value: bool = False, window: int = SCORE_WINDOW) -> float:
    """Mean of the last `window` eval returns of a run. A run that ended by reaching env.stop_value scores
    its final return: it counts as keeping it for the evaluations its budget had left."""
    if not returns:
        raise TidalError('the run made no evaluation: raise --budget-env-steps or evaluate more often '
                         '(policy.eval.evaluator.eval_freq_env_steps)')
    if stopped_at_stop_value:
        return float(returns[-1])
    return float(np.mean(returns[-window:]))


def aggregate_seeds(scores: Sequence[float]) -> float:
    """A trial's value: the mean of its seeds' scores, their IQM from IQM_FROM_SEEDS seeds on."""
    if not scores or not all(math.isfinite(score) for score in scores):
        raise TidalError(f'seed scores {list(scores)} cannot make a trial value: they must be finite')
    return iqm(scores) if len(scores) >= IQM_FROM_SEEDS else float(np.mean(scores))


def sample(trial: 'optuna.Trial', space: SearchSpace) -> list[str]:
    """Draw every key of the space; returns their `--set` overrides (also kept as the trial's user attr)."""
    sampled = [param.override(_suggest(trial, param)) for param in space]
    trial.set_user_attr('overrides', sampled)
    return sampled


def _suggest(trial: 'optuna.Trial', param: Param) -> Any:
    if param.kind == 'float':
        return trial.suggest_float(param.key, param.low, param.high, log=param.log, step=param.step)
    if param.kind == 'int':
        return trial.suggest_int(param.key, int(param.low), int(param.high), log=param.log, step=int(param.step or 1))
    if all(choice is None or isinstance(choice, (bool, int, float, str)) for choice in param.choices):
        return trial.suggest_categorical(param.key, list(param.choices))
    labels = [format_scalar(choice) for choice in param.choices]  # Optuna stores scalars only: lists by their text
    return param.choices[labels.index(trial.suggest_categorical(param.key, labels))]


def starting_values(space: SearchSpace, cfg: Any) -> dict[str, Any]:
    """The config's own values of the searched keys that lie in the space, as Optuna stores them. A new
    study's first trial tries them, so the search measures where it starts and reports a better config
    only if it found one."""
    values: dict[str, Any] = {}
    for param in space:
        node = value_at(cfg, param.key, MISSING)
        if isinstance(node, tuple):
            node = list(node)
        if param.kind == 'categorical':
            if node in param.choices:
                scalar = all(c is None or isinstance(c, (bool, int, float, str)) for c in param.choices)
                values[param.key] = node if scalar else format_scalar(node)
        elif isinstance(node, (int, float)) and not isinstance(node, bool) and param.low <= node <= param.high:
            values[param.key] = int(node) if param.kind == 'int' else float(node)
    return values


class _Reporter:
    """Each evaluation of seed `index`: the trial's value so far to the pruner, and a stop when it prunes.

    The value so far is the mean of the finished seeds' scores and this seed's running score; its step
    is the env step, after those of the seeds before (`stride` env steps each)."""

    def __init__(self, trial: 'optuna.Trial', finished: Sequence[float], index: int, stride: int) -> None:
        self.trial, self.finished, self.index, self.stride = trial, list(finished), index, stride
        self.returns: list[float] = []

    def __call__(self, row: dict[str, float]) -> None:
        import optuna
        self.returns.append(float(row['return_mean']))
        value = (sum(self.finished) + seed_score(self.returns)) / (len(self.finished) + 1)
        if not math.isfinite(value):
            return
        env_step = int(row['env_step'])
        self.trial.report(value, step=self.index * self.stride + env_step)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f'pruned at env step {env_step} of seed {self.index} (value so far {value:.2f})')


def run_trial(trial: 'optuna.Trial', setup: TuneSetup) -> float:
    """Sample the trial's values and train one run per seed, `<study>/trial_NNNN/seed_K/`, each a normal
    run folder; a sampled value that a key's rule refuses raises ConfigError as a user's would."""
    sampled = sample(trial, setup.space)
    trial_dir = setup.study_dir / f'trial_{trial.number:04d}'
    # a seed evaluates at env steps 0 ... budget: the next seed's steps start one past them, so that its
    # evaluation at env step 0 does not land on the step of the previous seed's last one
    stride = setup.budget_env_steps + 1 if setup.budget_env_steps else _UNBUDGETED_STRIDE
    scores: list[float] = []
    for index in range(setup.seeds):
        resolved = load_layered(setup.config_input, setup.base_seed + index,
                                setup.run_overrides(sampled, trial_dir / f'seed_{index}'))
        stop_value = resolved.cfg.env.stop_value
        with contextlib.redirect_stdout(io.StringIO()):  # each run's closing line: the trial prints its own
            result = start_run(resolved.cfg, setup.budget_env_steps, None, False, resolved.sources,
                               on_eval=_Reporter(trial, scores, index, stride))
        returns = [row['return_mean'] for row in result.evals]
        stopped = stop_value is not None and bool(returns) and returns[-1] >= stop_value
        scores.append(seed_score(returns, stopped))
        trial.set_user_attr('seed_scores', scores)
    return aggregate_seeds(scores)
