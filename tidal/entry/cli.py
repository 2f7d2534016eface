"""The `tidal` command line. User errors end with one line on stderr and exit code 2."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional, Sequence

if TYPE_CHECKING:
    from tidal.config.layered import ConfigInput

# Only the standard library above: `tidal --help` and a usage error answer before torch is imported. Each command
# imports what it runs.
MAX_SEED = 2**63 - 1  # as tidal.config.compiler.MAX_SEED (tested equal), which imports torch


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other user error (`--help` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be an integer, got {text!r}') from None


def _seed(text: str) -> int:
    """-s/--seed: an int in [0, 2**63 - 1], the seeds torch, numpy and gymnasium all accept."""
    seed = _integer(text)
    if not 0 <= seed <= MAX_SEED:
        raise argparse.ArgumentTypeError(f'must be an integer in [0, 2**63 - 1], got {text!r}')
    return seed


def _seed_list(text: str) -> list[int] | int:
    """--seeds: a count N (seeds s .. s+N-1 from the run's seed) or a comma-separated list of seeds."""
    if ',' not in text:
        return _positive(text)
    return [_seed(part.strip()) for part in text.split(',') if part.strip()]


def _positive(text: str) -> int:
    """A count or budget: an int > 0."""
    number = _integer(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f'must be an integer >= 1, got {text!r}')
    return number


_SEED_HELP = "seed in [0, 2**63 - 1]; overrides the config's seed (default: the config's seed, else 0)"


def _add_layers(p: argparse.ArgumentParser) -> None:
    p.add_argument('--config', dest='layer_files', action='append', default=[], metavar='FILE',
                   help='a YAML, JSON or .py file of a few keys merged over CONFIG (main_config/create_config, '
                        'or main_config\'s keys alone); repeatable, applied in order, before --set')


def _config_input(args: argparse.Namespace) -> 'ConfigInput':
    """CONFIG, with the --config files layered over it when there are any."""
    from tidal.config.layered import ConfigLayers
    return ConfigLayers(args.config, tuple(args.layer_files)) if args.layer_files else args.config


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('train', help='train a policy from a config file or zoo name')
    p.add_argument('config', help='config file (.py/.yaml/.json) or zoo config name, e.g. pendulum_sac')
    _add_layers(p)
    p.add_argument('-s', '--seed', type=_seed, help=_SEED_HELP)
    p.add_argument('--seeds', type=_seed_list, metavar='N|S1,S2,...',
                   help='train several seeds, each process stacking its share of them: N seeds from the run seed '
                        '(-s, else the config\'s) or a list; one run folder per seed plus aggregate/ in exp_name')
    p.add_argument('--processes', type=_positive, metavar='P',
                   help='processes a seed group spreads its seeds over (overrides seed_group.processes; default: '
                        'one per usable core, one per GPU on cuda)')
    p.add_argument('--device', choices=['cpu', 'cuda', 'auto'], help='overrides policy.device')
    p.add_argument('--max-env-step', type=_positive, help='stop after this many env steps')
    p.add_argument('--max-train-iter', type=_positive, help='stop after this many gradient updates')
    p.add_argument('--exp-name', help='run folder (overrides exp_name)')
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE',
                   help='import a module or a .py file first (registers your own policy, model or env), '
                        'e.g. my_package.my_policy or ./my_policy.py; repeatable')
    p.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE',
                   help='override a config key, e.g. policy.learn.batch_size=128; repeatable')
    p.add_argument('--no-progress', action='store_true', help='no progress bar')


def _add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('tune', help='search hyperparameters with Optuna; the objective averages several seeds')
    p.add_argument('config', help='config file or zoo config name whose values the search starts from')
    _add_layers(p)
    p.add_argument('--trials', type=_positive, required=True, help='trials to run (counting those of a resumed study)')
    p.add_argument('--seeds', type=_positive, default=1, help='seeds per trial; the objective is their mean '
                                                               '(their IQM from 4 seeds)')
    p.add_argument('--budget-env-steps', type=_positive, help='env steps per seed of a trial '
                                                              '(default: the config\'s own budget)')
    p.add_argument('--timeout', type=_positive, metavar='SECONDS', help='stop starting trials after this wall time')
    p.add_argument('--jobs', type=_positive, default=1, help='trials run at once')
    p.add_argument('--storage', help='Optuna storage URL (default: sqlite:///<study folder>/study.db)')
    p.add_argument('--space', metavar='FILE', help='YAML search space replacing the policy family\'s own')
    p.add_argument('--study-dir', help='study folder (default: tune/<exp_name>)')
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')
    p.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE',
                   help='fix a config key in every trial; repeatable')


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('export', help='write the deterministic acting policy as one TorchScript or ONNX file and '
                                      'check it against tidal\'s eval mode')
    p.add_argument('source', help='a run folder or a checkpoint file inside one')
    p.add_argument('--format', choices=['torchscript', 'onnx'], default='torchscript')
    p.add_argument('-o', '--output', help='file to write (default: <run folder>/export/policy.pt or .onnx)')
    p.add_argument('--hub', metavar='DIR', help='write the folder of a Hugging Face model repo instead: agent.pt '
                                                '(TorchScript, raw observations in), README.md (model card), '
                                                'config.yaml and replay.mp4')
    p.add_argument('--episodes', type=_positive, default=10,
                   help='with --hub: episodes of agent.pt scored for the model card (default: 10)')
    p.add_argument('-s', '--seed', type=_seed, help='with --hub: seed of the first scored episode (default: the '
                                                    "run's seed)")
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog='tidal', description='tidal: registry-driven reinforcement learning',
                     epilog=_ding_form_help())
    sub = parser.add_subparsers(dest='command', required=True)
    _add_train(sub)

    p = sub.add_parser('eval', help='evaluate a checkpoint with the policy\'s eval mode (policy.eval.deterministic)')
    p.add_argument('config', help='config file or zoo config name, or a run folder (its config.yaml)')
    _add_layers(p)
    p.add_argument('--ckpt', help='checkpoint file, or a run folder for its ckpt/best.pt (else ckpt/latest.pt); '
                                  'default: that of the run folder given as CONFIG')
    p.add_argument('--episodes', type=_positive, default=None,
                   help='episodes to run (default: env.n_evaluator_episode)')
    p.add_argument('-s', '--seed', type=_seed, help=_SEED_HELP)
    p.add_argument('--video', nargs='?', const='videos', default=None, metavar='DIR',
                   help='record the episodes as MP4 (GIF where no encoder is installed) into DIR (default: videos)')
    p.add_argument('--video-format', choices=['mp4', 'gif'], default=None,
                   help='format of the --video files (default: mp4, else gif where no MP4 encoder is installed)')
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')

    _add_tune(sub)
    _add_export(sub)

    p = sub.add_parser('resume', help='continue a run from its folder')
    p.add_argument('run_dir')
    p.add_argument('--max-env-step', type=_positive, default=None,
                   help="replace the run's env-step budget (continues a run its budget ended)")
    p.add_argument('--max-train-iter', type=_positive, default=None,
                   help="replace the run's train-iteration budget")
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')
    p.add_argument('--no-progress', action='store_true')

    p = sub.add_parser('list', help='list registered names or zoo configs')
    p.add_argument('what', nargs='?', default='all', choices=['all', 'policies', 'models', 'envs', 'configs'])

    p = sub.add_parser('config', help='inspect configs')
    config_sub = p.add_subparsers(dest='config_command', required=True)
    show = config_sub.add_parser('show', help='print the resolved config with the comments of its defaults, '
                                              'as a file `tidal train` runs')
    show.add_argument('config')
    _add_layers(show)
    show.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')
    show.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE')

    p = sub.add_parser('collect-demos', help='record expert demonstrations with a trained policy (for SQIL)')
    p.add_argument('config')
    _add_layers(p)
    p.add_argument('--ckpt', required=True, help='checkpoint of the expert policy, or its run folder (its '
                                                 'ckpt/best.pt, else ckpt/latest.pt)')
    p.add_argument('--episodes', type=_positive, required=True, help='episodes to record')
    p.add_argument('-o', '--output', help='demonstration file to write (.npz), for --format npz')
    p.add_argument('--format', choices=['npz', 'minari'], default='npz',
                   help="npz: tidal's demonstration file; minari: a Minari dataset (extra minari) under "
                        'MINARI_DATASETS_PATH (default ~/.minari/datasets)')
    p.add_argument('--dataset-id', metavar='NAMESPACE/ENV/NAME-vN', help='the Minari dataset to write, for '
                                                                          '--format minari')
    p.add_argument('--stochastic', action='store_true', help='sample actions instead of the deterministic policy')
    p.add_argument('-s', '--seed', type=_seed, help=_SEED_HELP)
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')
    p.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE',
                   help='override a config key (the envs the demonstrations come from, say); repeatable')

    p = sub.add_parser('build-datasets', help='build a D4RL-like suite of Minari datasets (random, medium, '
                                              'medium-replay, expert, medium-expert) from runs of a config')
    p.add_argument('config')
    _add_layers(p)
    p.add_argument('--max-env-step', type=_positive, help="the expert run's budget")
    p.add_argument('--expert-run', help='a finished run to take as the expert instead of training one (its config '
                                        'and seed make the medium run)')
    p.add_argument('--transitions', type=_positive, required=True,
                   help='transitions of each recorded level (whole episodes, at least this many)')
    p.add_argument('--prefix', metavar='NAMESPACE/ENV', help="the datasets' ids before /LEVEL-v0 (default: "
                                                             'mujoco/hopper for Hopper-v5, tidal/pendulum for Pendulum-v1)')
    p.add_argument('--runs-dir', help='folder of the expert and medium runs (default: the prefix, / as _, + _runs)')
    p.add_argument('-s', '--seed', type=_seed, help=_SEED_HELP)
    p.add_argument('--no-progress', action='store_true', help='hide the progress bars')
    p.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE')
    p.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE',
                   help='override a config key of the runs; repeatable')

    p = sub.add_parser('plot', help='plot eval (and collect) return against env steps for one or more runs; '
                                    'the seeds of one config make one curve (IQM with a 95%% bootstrap band)')
    p.add_argument('run_dirs', nargs='+')
    p.add_argument('-o', '--output', default='curves.png')
    p.add_argument('--per-run', action='store_true', help='one curve per run, even for seeds of one config')
    return parser


#: DI-engine's `ding -m MODE` entry modes that tidal has, and the serial entry point each runs.
DING_MODES = {'serial': 'serial_pipeline', 'serial_onpolicy': 'serial_pipeline_onpolicy',
              'serial_sqil': 'serial_pipeline_sqil', 'serial_offline': 'serial_pipeline_offline',
              'serial_bc': 'serial_pipeline_offline'}
#: How the `-m` form's errors name a serial entry point: by the flag that runs it (serial_offline for offline ones).
_DING_FLAGS = {entry: f'tidal -m {mode}' for mode, entry in DING_MODES.items() if mode != 'serial_bc'}


def _ding_form_help() -> str:
    """The `-m` form's usage, for `tidal --help` (the main parser's subcommands do not show it)."""
    usage = ' '.join(_ding_parser().format_usage().split()).removeprefix('usage: ').replace('[-h] ', '')
    return f"DI-engine's command form, for its config files: {usage}; its options: tidal -m MODE --help"


def _ding_parser() -> argparse.ArgumentParser:
    """DI-engine's own command form, `tidal -m serial -c FILE -s SEED`, for users' existing configs."""
    parser = _Parser(prog='tidal', description="DI-engine's command form: tidal -m MODE -c CONFIG -s SEED")
    parser.add_argument('-m', '--mode', required=True, choices=sorted(DING_MODES),
                        help='the serial entry point (as ding -m)')
    parser.add_argument('-c', '--config', required=True, help='config file (.py/.yaml/.json) or zoo config name')
    parser.add_argument('-s', '--seed', type=_seed, help=_SEED_HELP)
    parser.add_argument('--env-step', type=_positive, help='stop after this many env steps')
    parser.add_argument('--train-iter', type=_positive, help='stop after this many gradient updates')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar')
    parser.add_argument('--import', dest='imports', action='append', default=[], metavar='MODULE',
                        help='import a module or a .py file first (registers your own policy, model or env); '
                             'repeatable')
    parser.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE',
                        help='override a config key, e.g. policy.learn.batch_size=128; repeatable')
    return parser


def _ding(args: argparse.Namespace) -> None:
    """The serial entry point the mode names; a policy another one trains is refused naming its `-m` flag."""
    from tidal.entry.pipelines import train
    overrides = [*args.overrides, *_imports_kept(args.config, args.seed, args.imports, args.overrides)]
    train(args.config, seed=args.seed, max_env_step=args.env_step, max_train_iter=args.train_iter,
          overrides=overrides, progress=not args.no_progress, entry_point=DING_MODES[args.mode],
          entry_names=_DING_FLAGS)


def _imports_kept(config: 'ConfigInput', seed: Optional[int], imports: list[str], overrides: list[str]) -> list[str]:
    """The override that adds the --import entries to the run's top-level `import_names`, as given: its
    config.yaml then names them, so `tidal resume`, `tidal export` and `tidal eval` import them again from the
    same folder, and Ray workers, which build the policy from the config alone, import them too."""
    if not imports:
        return []
    from tidal.config.layered import load_layered
    names = list(load_layered(config, seed, overrides).cfg.get('import_names') or [])
    kept = names + [entry for entry in imports if entry not in names]
    return [f'import_names={json.dumps(kept)}'] if kept != names else []


def _train(args: argparse.Namespace) -> None:
    from tidal.entry.pipelines import train
    overrides = list(args.overrides)
    if args.device:
        overrides.append(f'policy.device={args.device}')
    if args.exp_name:
        overrides.append(f'exp_name={args.exp_name}')
    if args.processes:
        if args.seeds is None:
            from tidal.base.errors import ConfigError
            raise ConfigError('--processes spreads the seeds of a group: give it with --seeds')
        overrides.append(f'seed_group.processes={args.processes}')
    overrides += _imports_kept(_config_input(args), args.seed, args.imports, overrides)
    seed, seeds = args.seed, args.seeds
    if isinstance(seeds, int):  # a count: from the run's seed, as a single run would pick it
        from tidal.config.layered import load_layered
        first = load_layered(_config_input(args), seed, overrides).cfg.seed
        seed, seeds = None, list(range(first, first + seeds))
    elif seeds is not None:
        if seed is not None:
            from tidal.base.errors import ConfigError
            raise ConfigError('give -s SEED with --seeds N (a count), not with a list of seeds')
    train(_config_input(args), seed=seed, max_env_step=args.max_env_step, max_train_iter=args.max_train_iter,
          overrides=overrides, progress=not args.no_progress, seeds=seeds)


def _eval(args: argparse.Namespace) -> None:
    from tidal.entry.evaluate import evaluate_checkpoint
    run_dir = Path(args.config)
    if run_dir.is_dir():  # a run folder: its saved config, and its checkpoint unless --ckpt names one
        from tidal.worker.run_groups import run_checkpoint
        run_dir, ckpt = run_checkpoint(run_dir, 'eval')
        args.config, args.ckpt = str(run_dir / 'config.yaml'), args.ckpt or str(ckpt)
    elif args.ckpt is None:
        from tidal.base.errors import ConfigError
        raise ConfigError('tidal eval needs --ckpt CHECKPOINT_OR_RUN_FOLDER, or a run folder in place of CONFIG')
    result = evaluate_checkpoint(_config_input(args), args.ckpt, episodes=args.episodes, seed=args.seed,
                                 video_dir=args.video, video_format=args.video_format)
    print(f'eval return {result.return_mean:.2f} +- {result.return_std:.2f} over {_count(len(result.returns), "episode")} '
          f'(mean length {result.length_mean:.1f})')
    if result.videos:
        names = [Path(video).name for video in result.videos]
        span = names[0] if len(names) == 1 else f'{names[0]} ... {names[-1]}'
        print(f'videos: {_count(len(names), "episode")} in {Path(result.videos[0]).parent} ({span})')


def _count(number: int, noun: str) -> str:
    """'1 episode', '3 episodes'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _list(what: str) -> None:
    from tidal.config import zoo_names
    from tidal.registry import ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY
    tables = {'policies': POLICY_REGISTRY.names, 'models': MODEL_REGISTRY.names, 'envs': ENV_REGISTRY.names,
              'configs': zoo_names}
    for name, names in tables.items():
        if what in ('all', name):
            if what == 'all':
                print(f'{name}:')
            for entry in names():
                print(f'  {entry}' if what == 'all' else entry)


def _config_show(args: argparse.Namespace) -> None:
    from tidal.config import comments_for, format_run_config
    from tidal.config.layered import load_layered
    resolved = load_layered(_config_input(args), overrides=args.overrides)
    print(format_run_config(resolved.cfg, comments_for(resolved.cfg), resolved.sources), end='')


def _dispatch(args: argparse.Namespace) -> None:
    from tidal.registry import import_names
    if '' not in sys.path and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # modules in the working folder import, as under `python -m tidal`
    import_names(getattr(args, 'imports', []), source='--import')
    if getattr(args, 'mode', None):
        _ding(args)
    elif args.command == 'train':
        _train(args)
    elif args.command == 'eval':
        _eval(args)
    elif args.command == 'resume':
        from tidal.entry.pipelines import resume
        resume(args.run_dir, progress=not args.no_progress, max_env_step=args.max_env_step,
               max_train_iter=args.max_train_iter)
    elif args.command == 'list':
        _list(args.what)
    elif args.command == 'config':
        _config_show(args)
    elif args.command == 'collect-demos':
        from tidal.entry.demos import collect_demos
        path = collect_demos(_config_input(args), args.ckpt, args.episodes, args.output,
                             deterministic=not args.stochastic, seed=args.seed, overrides=args.overrides,
                             data_format=args.format, dataset_id=args.dataset_id)
        print(f'wrote {args.episodes} episodes to {path}'
              + (f' (Minari dataset {args.dataset_id})' if args.format == 'minari' else ''))
    elif args.command == 'build-datasets':
        from tidal.entry.offline_suite import build_datasets
        build_datasets(_config_input(args), args.max_env_step, args.transitions, args.prefix, args.seed,
                       args.overrides, args.runs_dir, progress=not args.no_progress, expert_run=args.expert_run)
    elif args.command == 'tune':
        from tidal.entry.tune import tune
        tune(_config_input(args), trials=args.trials, seeds=args.seeds, budget_env_steps=args.budget_env_steps,
             timeout_s=args.timeout, jobs=args.jobs, storage=args.storage, space=args.space,
             study_dir=args.study_dir, overrides=args.overrides, imports=args.imports)
    elif args.command == 'export' and args.hub is not None:
        if args.format != 'torchscript' or args.output is not None:
            from tidal.base.errors import TidalError
            raise TidalError('--hub writes agent.pt (TorchScript) into its folder: drop --format and --output')
        from tidal.entry.hub import export_hub
        print(export_hub(args.source, args.hub, episodes=args.episodes, seed=args.seed).summary())
    elif args.command == 'export':
        from tidal.entry.export import export_policy
        print(export_policy(args.source, args.format, args.output).summary())
    elif args.command == 'plot':
        from tidal.worker.plot import curve_groups, plot_curves
        curves = curve_groups(args.run_dirs, per_run=args.per_run)
        out = plot_curves(args.run_dirs, Path(args.output), per_run=args.per_run)
        runs = sum(len(curve.run_dirs) for curve in curves)
        pooled = (f' as {_count(len(curves), "curve")}, the seeds of one config as their IQM' if len(curves) < runs
                  else '')
        print(f'tidal: drew the eval returns of {_count(runs, "run")} into {out}{pooled}')


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ding_form = bool(argv) and (argv[0] in ('-m', '--mode') or argv[0].startswith('--mode='))
    try:
        args = (_ding_parser() if ding_form else _parser()).parse_args(argv)
    except SystemExit as exit_:  # a usage error, already printed in one line, or --help
        return exit_.code if isinstance(exit_.code, int) else 0
    from tidal.base.errors import TidalError
    try:
        _dispatch(args)
    except TidalError as err:
        signum = getattr(err, 'signum', None)  # a run stopped by SIGTERM / SIGINT, checkpointed first
        print(f"tidal: {'stopped' if signum else 'error'}: {err}", file=sys.stderr)
        return 128 + signum if signum else getattr(err, 'exit_code', 2)
    except KeyboardInterrupt:
        print('tidal: interrupted', file=sys.stderr)
        return 130
    return 0


if __name__ == '__main__':
    sys.exit(main())
