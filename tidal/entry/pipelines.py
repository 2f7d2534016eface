"""Starting and resuming runs with the data feed a policy names, for `tidal train`, `tidal resume` and the
serial entry points."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.base.errors import CheckpointError, ConfigError, TidalError
from tidal.config import read_config
from tidal.config.compiler import checked_seed
from tidal.entry.resume_budget import Budget, resumed_budget
from tidal.entry.result import GroupResult, RunResult
from tidal.entry.group_run import drive_group, trains_here
from tidal.entry.group_shares import ShareRunner, local_processes, split_seeds, stacking_pays
from tidal.entry.seed_group import check_groupable, group_overrides, recover_checkpoints, seed_from_folder
from tidal.worker.run_groups import GROUP_FILE, read_group, seed_folder, write_group
from tidal.entry.run import Run
from tidal.entry.setup import ConfigInput, check_budget, load_config, load_layered, new_run_dir, new_run_folder
from tidal.registry import feed_class, policy_class
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.distributed import broadcast_object, init_distributed


def run_feed(cfg: EasyDict) -> Any:
    """The registered feed class that trains the policy of `cfg`."""
    return feed_class(policy_class(cfg.policy.type, cfg.policy))


def check_entry_point(cfg: EasyDict, entry_point: str, entry_names: Optional[Mapping[str, str]] = None) -> None:
    """Refuse a policy whose feed another serial entry point trains, naming that one: by `entry_names` where it
    has the entry point (the CLI names its `-m` flag), else by its Python name."""
    spec = run_feed(cfg).spec(cfg)
    if spec.entry_point != entry_point:
        right = (entry_names or {}).get(spec.entry_point, spec.entry_point)
        raise ConfigError(f"policy '{cfg.policy.type}' {spec.learns}; train it with {right} "
                          f"(or tidal train, which picks the pipeline itself)")


def train(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
          max_train_iter: Optional[int] = None, overrides: Iterable[str] = (), progress: bool = True,
          entry_point: Optional[str] = None, seeds: Optional[Sequence[int]] = None,
          entry_names: Optional[Mapping[str, str]] = None) -> Any:
    """Train any registered policy with the data feed it names; `entry_point` (a serial entry point's name)
    refuses policies that another entry point trains, naming the right one as `entry_names` has it. With
    `seeds`, a seed group (a `GroupResult`; `seed` must then be None)."""
    if seeds is not None:
        if seed is not None:
            raise ConfigError('give either seed or seeds, not both')
        return train_group(input_cfg, seeds, max_env_step, max_train_iter, overrides, progress, entry_point,
                           entry_names)
    resolved = load_layered(input_cfg, seed, overrides)
    if entry_point is not None:
        check_entry_point(resolved.cfg, entry_point, entry_names)
    return start_run(resolved.cfg, max_env_step, max_train_iter, progress, resolved.sources)


def start_run(cfg: EasyDict, max_env_step: Optional[int], max_train_iter: Optional[int], progress: bool,
              sources: Sequence[str] = (), on_eval: Optional[Callable[[dict[str, float]], None]] = None) -> RunResult:
    """Make the run folder, save the resolved config in it and train the run shell with the policy's feed.

    If the run cannot be built (a bad config value found by a policy, an env that fails to start),
    the folder, new or empty before, is removed again rather than left half-written. Under torchrun
    only rank 0 makes and writes the folder; the other ranks learn its path from rank 0.
    """
    feed_cls = run_feed(cfg)
    check_budget(cfg, max_env_step, max_train_iter, feed_cls)  # before the folder: a refused run leaves none
    context = init_distributed(policy_device(cfg.policy))
    made: Union[Path, TidalError, None] = None
    if context.is_main:
        try:
            made = new_run_folder(cfg, max_env_step, max_train_iter, sources)
        except TidalError as err:
            made = err
    made = broadcast_object(context, made)  # every rank stops on rank 0's error, or runs in its folder
    if isinstance(made, TidalError):
        raise made
    run_dir = made
    assert isinstance(run_dir, Path)
    try:
        run = Run(cfg, run_dir, feed_cls, max_env_step, max_train_iter, progress, on_eval=on_eval)
    except OSError as err:
        if context.is_main:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise TidalError(f"cannot write the run folder '{run_dir}': {err.strerror or err}") from err
    except BaseException:
        if context.is_main:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return RunResult.of_run(run.train(), run_dir)


def train_group(input_cfg: ConfigInput, seeds: Sequence[int], max_env_step: Optional[int] = None,
                max_train_iter: Optional[int] = None, overrides: Iterable[str] = (), progress: bool = True,
                entry_point: Optional[str] = None, entry_names: Optional[Mapping[str, str]] = None) -> GroupResult:
    """Train the seeds `seeds` of one config as a group: split into shares (`seed_group.processes`, by default one
    per usable core or GPU), each stacked in a process of its own or on Ray (`tidal.entry.group_run`); a group
    folder named by `exp_name`, a run folder per seed in it, and `aggregate/`."""
    seeds = checked_seeds(seeds)
    overrides = list(overrides)
    first = load_layered(input_cfg, seeds[0], overrides).cfg
    if entry_point is not None:
        check_entry_point(first, entry_point, entry_names)
    feed_cls = run_feed(first)
    check_budget(first, max_env_step, max_train_iter, feed_cls)
    check_groupable(first, feed_cls)  # before any folder is made
    overrides += group_overrides(first)
    if init_distributed(policy_device(first.policy)).enabled:
        raise ConfigError('--seeds starts its own processes: start it without torchrun')
    runner = group_runner(first)
    count, why = runner.processes(first, len(seeds)) if runner else local_processes(first, len(seeds))
    shares = split_seeds(seeds, count)
    stacked, how = stacking_pays(first)
    try:
        group_dir = new_run_dir(first.exp_name)
        write_group(group_dir, {'seeds': seeds, 'max_env_step': max_env_step, 'max_train_iter': max_train_iter,
                                'shares': shares, 'stacked': stacked})
    except OSError as err:
        raise TidalError(f"cannot write the group folder '{first.exp_name}' (exp_name): {err.strerror or err}") from err
    try:
        cfgs = []
        for seed in seeds:
            layered = load_layered(input_cfg, seed, [*overrides, f'exp_name={seed_folder(group_dir, seed)}'])
            new_run_folder(layered.cfg, max_env_step, max_train_iter, layered.sources)
            cfgs.append(layered.cfg)
    except BaseException:
        shutil.rmtree(group_dir, ignore_errors=True)
        raise
    return drive_group(group_dir, shares, cfgs[0], f'{why}; {how}', progress, runner, fresh=True)


def group_runner(cfg: EasyDict) -> Optional[ShareRunner]:
    """What runs a group's shares when they are not processes of this machine: Ray tasks (`seed_group.on_ray`)."""
    if not cfg.seed_group.on_ray:
        return None
    from tidal.entry.group_ray import RayRunner
    return RayRunner(cfg)


def checked_seeds(seeds: Sequence[int]) -> list[int]:
    """The seeds of a group: distinct, each a valid seed, at least one."""
    checked = [checked_seed(seed) for seed in seeds]
    if not checked:
        raise ConfigError('--seeds needs at least one seed')
    if len(set(checked)) != len(checked):
        raise ConfigError(f'--seeds lists a seed twice: {checked}')
    return checked


def resume_group(group_dir: Path, progress: bool = True, new: Budget = Budget()) -> Optional[GroupResult]:
    """Continue every seed of a group that has not ended (first completing or undoing the rounds of checkpoints a
    kill interrupted), each share of the group's split in a process of its own as before; seeds of a share whose
    checkpoints stand at different env steps (one was resumed alone) make a share per env step. A `new` budget
    replaces the group's (group.json)."""
    spec = read_group(group_dir)
    if new.given:
        budget = new.over(Budget(spec['max_env_step'], spec['max_train_iter']))
        spec.update(max_env_step=budget.max_env_step, max_train_iter=budget.max_train_iter)
    recover_checkpoints(group_dir, [seed_folder(group_dir, seed) for seed in spec['seeds']])
    pending: list[tuple[EasyDict, Path, Optional[dict[str, Any]]]] = []
    for seed in spec['seeds']:
        cfg, run_dir, state = seed_from_folder(group_dir, seed)
        if state is None and (run_dir / 'log.txt').is_file():  # else its turn had not come (a group in turn)
            print(f"tidal: seed {seed} of '{group_dir}' stopped before its first checkpoint; it starts again from "
                  f"the beginning", flush=True)
        if state is None:
            _clear_partial(run_dir)
        # a new budget may continue a seed its budget had ended (resumed_budget says which, and checks the budget)
        resumable = state is None or (resumed_budget(run_dir, state, new) is not None if new.given
                                      else not state.get('finished'))
        if resumable:
            pending.append((cfg, run_dir, state))
    if not pending:
        print(f"tidal: group '{group_dir}' already ended; nothing to resume", flush=True)
        return None
    if new.given:
        write_group(group_dir, spec)
    states = {cfg.seed: state for cfg, _, state in pending}
    shares = resumed_shares(spec, states)
    if len(shares) > len([share for share in spec.get('shares', [spec['seeds']]) if set(share) & set(states)]):
        print(f"tidal: some seeds of '{group_dir}' were checkpointed at other env steps than the rest of their share "
              f"(one was resumed alone?); each env step's seeds resume as a share of their own", flush=True)
    cfg, runner = pending[0][0], group_runner(pending[0][0])
    # the checkpoints read above serve a group trained here; processes of their own read their seeds' again, and
    # this process lets go of them (a replay in each: they may be large)
    loaded = states if trains_here(shares, runner) else None
    del pending, states, state
    return drive_group(group_dir, shares, cfg, 'as the group was split', progress, runner, loaded=loaded)


def resumed_shares(spec: dict[str, Any], states: Mapping[int, Optional[dict[str, Any]]]) -> list[list[int]]:
    """The shares a group resumes in: its shares as it was split (one share, for a group from before splits were
    recorded), each holding its seeds still to train; a stacked share's seeds checkpointed at one env step
    together."""
    shares: list[list[int]] = []
    for share in spec.get('shares') or [spec['seeds']]:
        if not spec.get('stacked', True):  # seeds in turn: each at its own env step
            shares.append([seed for seed in share if seed in states])
            continue
        by_step: dict[int, list[int]] = {}
        for seed in share:
            if seed in states:
                state = states[seed]
                by_step.setdefault(0 if state is None else state['collector']['env_step'], []).append(seed)
        shares += by_step.values()
    return [share for share in shares if share]


def resume(run_dir: str | os.PathLike, progress: bool = True, max_env_step: Optional[int] = None,
           max_train_iter: Optional[int] = None) -> Any:
    """Continue a run from its folder: its saved config and its latest checkpoint (a seed group's folder:
    every seed's run).

    `max_env_step` / `max_train_iter` replace the run's budget, and continue a run its budget had ended. A run
    that already ended otherwise (its stop value reached), or by its budget with none given, is left as it is:
    None is returned.
    """
    run_dir, new = Path(run_dir), Budget(max_env_step, max_train_iter)
    if (run_dir / GROUP_FILE).is_file():
        return resume_group(run_dir, progress, new)
    config_path = run_dir / 'config.yaml'
    if not run_dir.is_dir():
        raise TidalError(f"run folder '{run_dir}' does not exist (a run stopped before it made its folder "
                         f"has nothing to resume: start it with tidal train)")
    if not config_path.is_file():
        raise TidalError(f"'{run_dir}' is not a tidal run folder (it has no config.yaml)")
    main_config, create_config = read_config(str(config_path))
    cfg = load_config((main_config, create_config))  # the saved config holds the run's seed
    latest = run_dir / 'ckpt' / 'latest.pt'
    if not latest.is_file():
        return _start_again(cfg, run_dir, progress, new)
    state = load_checkpoint(latest)
    budget = resumed_budget(run_dir, state, new)
    if budget is None:
        return None
    run = Run(cfg, run_dir, run_feed(cfg), budget.max_env_step, budget.max_train_iter, progress,
              resume_state=state)
    return RunResult.of_run(run.train(), run_dir)


def _start_again(cfg: EasyDict, run_dir: Path, progress: bool, new: Budget) -> RunResult:
    """A run killed while it started, before its first checkpoint: run it again from the beginning,
    which with the same config and seed is the run it would have been."""
    try:
        saved = json.loads((run_dir / 'summary.json').read_text())
        budget = new.over(Budget(saved['max_env_step'], saved['max_train_iter']))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"run '{run_dir}' has no checkpoint and no budget in its summary.json; start it "
                              f"again with tidal train {run_dir / 'config.yaml'}") from err
    print(f"tidal: run '{run_dir}' stopped before its first checkpoint; it starts again from the beginning",
          flush=True)
    _clear_partial(run_dir)
    run = Run(cfg, run_dir, run_feed(cfg), budget.max_env_step, budget.max_train_iter, progress)
    return RunResult.of_run(run.train(), run_dir)


def _clear_partial(run_dir: Path) -> None:
    """What a run killed before its first checkpoint wrote besides its config and budget."""
    for partial in ('log.txt', 'evals.csv', 'curve.png'):
        (run_dir / partial).unlink(missing_ok=True)
    shutil.rmtree(run_dir / 'log', ignore_errors=True)
    shutil.rmtree(run_dir / 'ckpt', ignore_errors=True)
