"""A run's config and folder: compiling the user's input and making the run folder (before any part is built)."""
from __future__ import annotations

import itertools
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Iterable, Optional, Sequence

from easydict import EasyDict

from tidal.base.errors import ConfigError, TidalError
from tidal.base.feed import FeedClass
from tidal.config import save_config
from tidal.config.ding import write_ding_mapping
from tidal.config.layered import ConfigInput, load_layered
from tidal.worker.logger import write_summary


def load_config(input_cfg: ConfigInput, seed: Optional[int] = None, overrides: Iterable[str] = ()) -> EasyDict:
    """Compile a config given as a file path, a zoo name, a (main_config, create_config) pair or a
    ConfigLayers; `seed` wins over the config's seed, which wins over 0."""
    return load_layered(input_cfg, seed, overrides).cfg


def new_run_dir(exp_name: str) -> Path:
    """`exp_name`, or a new `exp_name_<yymmdd_hhmmss>` (`_2`, `_3`, ... after it when runs start in the same
    second) if that folder already holds a run: a run never writes into another's folder, and the move is said in
    one line, since the commands that follow name the folder."""
    run_dir = Path(exp_name)
    if not (run_dir.exists() and any(run_dir.iterdir())):
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir
    stamped = f"{exp_name}_{time.strftime('%y%m%d_%H%M%S')}"
    names = (Path(stamped if attempt == 1 else f'{stamped}_{attempt}') for attempt in itertools.count(1))
    run_dir = next(name for name in names if _made(name))
    print(f"tidal: '{exp_name}' already holds a run, so this run writes to '{run_dir}' "
          '(give --exp-name to choose the folder)', file=sys.stderr, flush=True)
    return run_dir


def _made(folder: Path) -> bool:
    """Whether this process made `folder` now: of several processes asking for one name, one gets it."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        return False
    return True


def check_budget(cfg: EasyDict, max_env_step: Optional[int], max_train_iter: Optional[int],
                 feed_cls: FeedClass) -> None:
    """Refuse a run that nothing would end, or whose env-step budget ends before its first update."""
    offline = feed_cls.spec(cfg).offline
    if offline and max_env_step is not None:
        raise ConfigError(f"policy '{cfg.policy.type}' learns offline and steps no env: give its budget in train "
                          f"iterations (max_train_iter, --max-train-iter), not max_env_step")
    never_stops = cfg.env.stop_value is None or math.isinf(cfg.env.stop_value)
    if offline and max_train_iter is None and never_stops and cfg.policy.learn.get('train_epoch') is None:
        raise ConfigError('nothing would end this offline run: give max_train_iter (--max-train-iter), '
                          'policy.learn.train_epoch or a finite env.stop_value')
    if max_env_step is None and max_train_iter is None and never_stops:
        raise ConfigError('nothing would end this run: give max_env_step (--max-env-step), '
                          'max_train_iter or a finite env.stop_value')
    key, warmup = feed_cls.warmup(cfg)
    if max_env_step is not None and warmup >= max_env_step:
        raise ConfigError(f'{key} {warmup} >= budget {max_env_step} env steps: this run would make no update; '
                          f'raise --max-env-step or lower {key}')


def new_run_folder(cfg: EasyDict, max_env_step: Optional[int], max_train_iter: Optional[int],
                   sources: Sequence[str] = ()) -> Path:
    try:
        run_dir = new_run_dir(cfg.exp_name)
    except OSError as err:
        raise TidalError(f"cannot create the run folder '{cfg.exp_name}' (exp_name): {err.strerror or err}") from err
    try:
        # the config and the budget come first: a run killed before its first checkpoint can start again
        save_config(cfg, run_dir / 'config.yaml', sources)
        write_ding_mapping(cfg, run_dir)
        write_summary(run_dir, {'outcome': 'starting', 'max_env_step': max_env_step, 'max_train_iter': max_train_iter})
    except OSError as err:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise TidalError(f"cannot write the run folder '{run_dir}': {err.strerror or err}") from err
    return run_dir
