"""`tidal tune`: a hyperparameter search on Optuna whose objective averages several seeds.

A study lives in its folder (default `tune/<exp_name>`): the Optuna storage (`study.db`, SQLite), one
folder per trial with a normal run folder per seed, `best.yaml`, `trials.csv` and `importance.png`.
Running `tidal tune` again on the folder continues the study up to `--trials` trials in all (complete,
pruned and failed). One `tidal tune` holds a study folder at a time (a lock file), so a trial still
RUNNING in the storage when it starts was left by a killed process: it is marked failed and its values
are queued to be tried again. `--jobs J` runs J worker processes that share the storage.
"""
from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, Iterable, Iterator, Optional, Sequence

from tidal.base.errors import ConfigError, TidalError
from tidal.base.files import locked
from tidal.config.layered import ConfigInput, load_layered
from tidal.config.yaml_io import parse_scalar
from tidal.config.search_space import check_space_keys, family_space, read_space, without_keys
from tidal.entry.pipelines import run_feed
from tidal.entry.run import RunInterrupted
from tidal.entry.setup import check_budget
from tidal.entry.tune_report import trial_reason, write_best, write_importance, write_table
from tidal.entry.tune_trial import TuneSetup, run_trial, starting_values
from tidal.registry import import_names, policy_class

if TYPE_CHECKING:
    import optuna

#: Trials before the median pruner may stop one, and the share of a seed's budget it always lets run.
PRUNER_STARTUP_TRIALS = 5
PRUNER_WARMUP_SHARE = 0.25

_COUNTED = ('COMPLETE', 'PRUNED', 'FAIL', 'RUNNING')


def _optuna() -> None:
    try:
        import optuna
    except ImportError:
        raise TidalError('tidal tune needs optuna: pip install -e ".[tune]"') from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def tune(config_input: ConfigInput, trials: int, seeds: int = 1, budget_env_steps: Optional[int] = None,
         timeout_s: Optional[float] = None, jobs: int = 1, storage: Optional[str] = None,
         space: Optional[str | os.PathLike[str]] = None, study_dir: Optional[str | os.PathLike[str]] = None,
         overrides: Iterable[str] = (), imports: Sequence[str] = ()) -> 'optuna.Study':
    """Run (or continue) the study of `config_input` until it holds `trials` trials or `timeout_s` passes."""
    _optuna()
    overrides = tuple([overrides] if isinstance(overrides, str) else overrides)
    base = load_layered(config_input, None, overrides).cfg  # the user's own config passes the checks first
    check_budget(base, budget_env_steps, None, run_feed(base))
    if space is None:
        searched, where = family_space(_policy_types(base.policy.type)), f"the search space of '{base.policy.type}'"
    else:
        searched, where = read_space(space), f"search space '{os.fspath(space)}'"
    searched = without_keys(searched, overrides)
    check_space_keys(searched, base, where)
    folder = Path(study_dir) if study_dir is not None else Path('tune') / base.exp_name
    setup = TuneSetup(config_input, overrides, searched, seeds, int(base.seed), budget_env_steps, folder,
                      start=starting_values(searched, base))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TidalError(f"cannot create the study folder '{folder}': {err.strerror or err}") from err
    storage_url = storage or f"sqlite:///{folder / 'study.db'}"
    deadline = None if timeout_s is None else time.time() + timeout_s
    with _holding(folder):
        study = _open_study(storage_url, folder.name, setup)
        _check_same_study(study, setup)
        _retire_running(study, 'interrupted: the tidal tune process running it stopped')
        print(f'tidal tune: study {folder} ({storage_url}): {_count(study)} of {trials} trials done; '
              f'{len(searched)} keys searched, {seeds} seed(s) per trial', flush=True)
        if jobs == 1:
            work(setup, study, trials, deadline, base.exp_name)
        else:
            _work_in_processes(setup, storage_url, folder.name, trials, deadline, base.exp_name, jobs, imports)
        _summarise(study, setup, base.exp_name)
    return study


def _policy_types(policy_type: str) -> list[str]:
    """The policy's type, then the types of the registered classes it derives from (a user's PPO subclass
    is searched in PPO's space)."""
    declared = [vars(cls)['config'].get('type') for cls in policy_class(policy_type).__mro__
                if isinstance(vars(cls).get('config'), dict)]
    return [policy_type, *(name for name in declared if name)]


def _open_study(storage_url: str, name: str, setup: TuneSetup) -> 'optuna.Study':
    import optuna
    warmup = int(PRUNER_WARMUP_SHARE * setup.budget_env_steps) if setup.budget_env_steps else 0
    pruner = optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=warmup)
    try:
        storage: str | optuna.storages.RDBStorage = storage_url
        if storage_url.startswith('sqlite:'):  # worker processes wait for each other's writes
            storage = optuna.storages.RDBStorage(storage_url, engine_kwargs={'connect_args': {'timeout': 60}})
        return optuna.create_study(storage=storage, study_name=name, direction='maximize', pruner=pruner,
                                   load_if_exists=True)
    except (ImportError, ValueError, optuna.exceptions.OptunaError) as err:
        raise TidalError(f"cannot open the study storage '{storage_url}': {' '.join(str(err).split())}") from err
    except Exception as err:  # the database driver's own errors (a folder that is not writable, a bad URL)
        if type(err).__module__.split('.')[0] != 'sqlalchemy':
            raise
        raise TidalError(f"cannot open the study storage '{storage_url}': {type(err).__name__}") from err


def _check_same_study(study: 'optuna.Study', setup: TuneSetup) -> None:
    """A continued study keeps its seeds, budget, search space and fixed keys: its trials must compare."""
    settings = {'seeds': setup.seeds, 'budget_env_steps': setup.budget_env_steps, 'set': list(setup.overrides),
                'space': {param.key: param.as_spec() for param in setup.space}}
    saved = study.user_attrs.get('settings')
    if saved is None:
        study.set_user_attr('settings', settings)
        return
    for name, value in settings.items():
        if saved.get(name) != value:
            raise ConfigError(f"study '{study.study_name}' was run with {name} {saved.get(name)!r}, not {value!r}: "
                              f"continue it with the same, or start another with --study-dir")


def _retire_running(study: 'optuna.Study', reason: str) -> None:
    """Mark failed the trials a killed process left RUNNING, and queue their values to be tried again."""
    import optuna
    for frozen in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        _fail(study, optuna.trial.Trial(study, frozen._trial_id), reason, retry=True)
        print(f'tidal tune: trial {frozen.number} was {reason}; its values are queued again', flush=True)


def _fail(study: 'optuna.Study', trial: 'optuna.Trial', reason: str, retry: bool = False) -> None:
    import optuna
    trial.set_user_attr('fail_reason', ' '.join(reason.split()))
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    if retry and trial.params:
        study.enqueue_trial(trial.params)


def _count(study: 'optuna.Study') -> int:
    """Trials that count towards --trials: finished (complete, pruned, failed) or running."""
    import optuna
    states = tuple(optuna.trial.TrialState[name] for name in _COUNTED)
    return len(study.get_trials(deepcopy=False, states=states))


@contextlib.contextmanager
def _holding(folder: Path) -> Iterator[None]:
    """The study folder's lock, for as long as this process runs the study. Its files go when it ends: its
    workers (the only users of ask.lock) have ended, and another tidal tune that opened tune.lock meanwhile
    found it held and stopped."""
    with open(folder / 'tune.lock', 'a+') as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise TidalError(f"study folder '{folder}' is in use by another tidal tune; wait for it or use "
                             f"--jobs to run trials at once") from None
        try:
            yield
        finally:
            for name in ('ask.lock', 'tune.lock'):
                (folder / name).unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _asking(folder: Path) -> ContextManager[None]:
    """Workers count and start trials one at a time, so together they start exactly --trials."""
    return locked(folder / 'ask.lock')


def work(setup: TuneSetup, study: 'optuna.Study', trials: int, deadline: Optional[float], exp_name: str,
         worker: int = 0) -> None:
    """Start trials until the study holds `trials` of them or the deadline (time.time()) passes.

    The sampler's seed follows the config's seed, the worker and the trials already in the study, so that a
    continued study draws new values rather than those it started with."""
    import numpy as np
    import optuna
    seed = np.random.SeedSequence([setup.base_seed, worker, len(study.trials)]).generate_state(1)[0]
    study.sampler = optuna.samplers.TPESampler(seed=int(seed))
    while True:
        write_table(study, setup.study_dir / 'trials.csv')  # kept current while the study runs
        with _asking(setup.study_dir):
            if _count(study) >= trials or (deadline is not None and time.time() >= deadline):
                return
            if not study.trials and setup.start:  # a new study first measures where it starts
                study.enqueue_trial(setup.start)
                print(f"tidal tune: trial 0 tries the config's own values of {len(setup.start)} of the "
                      f'{len(setup.space)} keys searched', flush=True)
            trial = study.ask()
        started = time.monotonic()
        try:
            value = run_trial(trial, setup)
        except optuna.TrialPruned as pruned:
            trial.set_user_attr('pruned', str(pruned))
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            _say(trial.number, f'{pruned}', started)
            continue
        except RunInterrupted as err:  # SIGTERM / SIGINT: the run checkpointed; the study stops, to be continued
            _fail(study, trial, f'interrupted by {signal.Signals(err.signum).name}', retry=True)
            raise RunInterrupted(f'{signal.Signals(err.signum).name} in trial {trial.number}: the study stopped; the '
                                 f'same tidal tune command continues it (and tries these values again)',
                                 err.signum) from err
        except KeyboardInterrupt:
            _fail(study, trial, 'interrupted', retry=True)
            raise
        except TidalError as err:  # a refused config, a diverged run: the study goes on
            _fail(study, trial, str(err))
            _say(trial.number, f"failed: {' '.join(str(err).split())}", started)
            continue
        except BaseException as err:  # a bug: recorded, then shown in full
            _fail(study, trial, f'{type(err).__name__}: {err}')
            raise
        study.tell(trial, value)
        scores = ', '.join(f'{score:.2f}' for score in trial.user_attrs.get('seed_scores', []))
        best = study.best_trial.number == trial.number
        if best:
            write_best(study, setup, exp_name)
        _say(trial.number, f"{value:.2f} (seeds {scores}){' best so far' if best else ''}; "
                           f"{_brief(trial.user_attrs['overrides'])}", started)


def _brief(overrides: Sequence[str]) -> str:
    """Sampled values for a progress line: floats to 4 significant digits (best.yaml keeps them whole)."""
    shown = []
    for text in overrides:
        key, _, raw = text.partition('=')
        value = parse_scalar(raw)
        shown.append(f'{key.rpartition(".")[2]}={value:.4g}' if isinstance(value, float) else
                     f'{key.rpartition(".")[2]}={raw}')
    return ', '.join(shown)


def _say(number: int, what: str, started: float) -> None:
    print(f'tidal tune: trial {number}: {what} [{time.monotonic() - started:.0f} s]', flush=True)


def _work_in_processes(setup: TuneSetup, storage_url: str, name: str, trials: int, deadline: Optional[float],
                       exp_name: str, jobs: int, imports: Sequence[str]) -> None:
    """`jobs` worker processes (spawned: torch does not survive a fork well) on the shared storage."""
    context = multiprocessing.get_context('spawn')
    processes = [context.Process(target=_worker_main, args=(setup, storage_url, name, trials, deadline, exp_name,
                                                            worker, list(imports), os.getcwd()))
                 for worker in range(jobs)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    failed = [process.exitcode for process in processes if process.exitcode]
    if failed:
        raise TidalError(f'{len(failed)} of {jobs} tune workers stopped (exit codes {failed}); their output says why')


def _worker_main(setup: TuneSetup, storage_url: str, name: str, trials: int, deadline: Optional[float],
                 exp_name: str, worker: int, imports: list[str], cwd: str) -> None:
    """A worker process: the user's modules imported again, then trials like the main process runs them."""
    if cwd not in sys.path:
        sys.path.append(cwd)
    try:
        import_names(imports, source='--import')
        _optuna()
        work(setup, _open_study(storage_url, name, setup), trials, deadline, exp_name, worker)
    except TidalError as err:
        print(f'tidal tune: worker {worker} stopped: {err}', file=sys.stderr, flush=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


def _summarise(study: 'optuna.Study', setup: TuneSetup, exp_name: str) -> None:
    """trials.csv, best.yaml and importance.png, and a short summary of the study."""
    import optuna
    folder = setup.study_dir
    table = write_table(study, folder / 'trials.csv')
    states = {state: len(study.get_trials(deepcopy=False, states=(state,))) for state in optuna.trial.TrialState}
    counts = ', '.join(f"{count} {'failed' if state.name == 'FAIL' else state.name.lower()}"
                       for state, count in states.items() if count)
    print(f'tidal tune: {sum(states.values())} trials ({counts or "none"}); table {table}')
    best_path = write_best(study, setup, exp_name)
    if best_path is None:
        failed = [trial for trial in study.trials if trial.state == optuna.trial.TrialState.FAIL]
        hint = f' (last failure: {trial_reason(failed[-1])})' if failed else ''
        print(f'tidal tune: no complete trial, so no best.yaml{hint}')
    else:
        best = study.best_trial
        print(f"tidal tune: best trial {best.number}: {best.value:.2f} with {_brief(best.user_attrs['overrides'])}")
        print(f'tidal tune: best config {best_path} (run it: tidal train {best_path})')
    print(f'tidal tune: {write_importance(study, folder / "importance.png")}', flush=True)
