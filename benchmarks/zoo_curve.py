"""Learning-curve benchmark of one tidal zoo config over seeds (tidal only).

Runs the zoo config (plus any `--set` overrides) for each seed, two seeds at a time, one per core, and
writes `results.json`, `curves.png` and `table.md`. The config's stop value is removed so every seed
runs the whole budget, unless `--keep-stop-value`. A script for one config calls `main` with its own
defaults (see `discrete_sac_cartpole.py`), among them a published curve (`published`, {env step: return},
and `published_label`) that the plot and the table set beside tidal's at the same env steps.

    python benchmarks/zoo_curve.py CONFIG [--seeds 0 1 2] [--steps 20000] [--threads 1] [--set KEY=VALUE]...
"""
import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, check_tidal_config, display_path, merge_overrides, read_run, run_batch,
                    shown_command, tidal_train_command)
from published import published_at
from report import fmt_steps, library_row, markdown_table, milestones, plot_curves

FULL_BUDGET = ['env.stop_value=null']  # run every step of the budget, whatever return the seed reaches
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 2000


def parse_args(argv: list[str] | None, defaults: dict) -> argparse.Namespace:
    """The options; `defaults` replaces the parser's (a `config` default drops the CONFIG argument).

    Besides the options, `name` (results.json's `benchmark` and the default output folder) and `label`
    (the curve's legend) can be given as defaults; both fall back to the config name.
    """
    name = defaults.get('name', 'CONFIG')
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if 'config' not in defaults:
        parser.add_argument('config', help='zoo config name, as `tidal train` takes it')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=20_000, help='env steps per run (default: %(default)s)')
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None,
                        help=f'output folder (default: benchmarks/results/{name}, or {name}_quick)')
    parser.add_argument('--quick', action='store_true', help=f'smoke test: {QUICK_STEPS} steps, first seed only')
    parser.add_argument('--set', dest='extra_sets', action='append', default=[], metavar='KEY=VALUE',
                        help='tidal config override, repeatable')
    parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    parser.add_argument('--title', default=None,
                        help='heading of table.md (default: "<policy type> on <env id> (tidal)")')
    parser.add_argument('--note', dest='notes', action='append', default=[], metavar='TEXT',
                        help='line added to the notes of table.md, repeatable')
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument('--full-budget', dest='full_budget', action='store_true', default=True,
                        help=f'set {FULL_BUDGET[0]} so every seed runs all --steps (default)')
    budget.add_argument('--keep-stop-value', dest='full_budget', action='store_false',
                        help="keep the config's stop value: a run ends once its eval return reaches it")
    parser.set_defaults(**{'name': None, 'label': None, 'published': None, 'published_label': '',
                           'ylabel': 'eval return (deterministic)', **defaults})
    args = parser.parse_args(argv)
    args.name = args.name or args.config
    args.label = args.label or args.config
    if args.quick:
        args.steps, args.seeds = QUICK_STEPS, args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / (f'{args.name}_quick' if args.quick else args.name)
    return args


def policy_and_env(config: str, overrides: list[str]) -> tuple[str, str]:
    """The policy type and env id the runs train with; exits naming the problem if the config cannot be built."""
    check_tidal_config(config, overrides)  # also puts the checkout's tidal first on sys.path
    from tidal.config import compile_config, resolve_config_source
    from tidal.config.env_probe import env_name

    cfg = compile_config(*resolve_config_source(config), overrides=overrides, infer_shapes=False)
    return cfg.policy.type, env_name(cfg.env)


def build_report(args: argparse.Namespace, jobs: dict[int, Job], env_id: str) -> str:
    """Reads the run folders, writes results.json, curves.png and table.md; returns the table text."""
    runs = [read_run(jobs[seed].run_dir) for seed in args.seeds]
    marks = milestones(args.steps)
    row = library_row(runs, marks)
    commands = {seed: shown_command(job.cmd, args.threads) for seed, job in jobs.items()}
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({args.label: runs}, args.out / 'curves.png',
                f'{args.title}, {len(args.seeds)} seed(s): median, min-max band', ylabel=args.ylabel,
                published={args.published_label: args.published} if args.published else None)
    published = published_table(args.published, args.published_label, marks) if args.published else []
    results = {'benchmark': args.name, 'config': args.config, 'env_id': env_id, 'steps': args.steps,
               'seeds': args.seeds, 'threads': args.threads, 'milestones': marks, 'versions': vers,
               'commands': commands, 'table': row, 'runs': dict(zip(args.seeds, runs))}
    if args.published:
        results['published'] = {'label': args.published_label, 'curve': args.published}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    stop_note = [] if args.full_budget else [
        "The config's stop value is kept: a run ends once its eval return reaches it, so a later milestone "
        'can show its last evaluation.']
    notes = ['Returns are medians over seeds of the last evaluation at or before each milestone ("at ..." '
             'names the env step when it differs).',
             'Wall clock runs from the start of training to its end and includes evaluation.',
             f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.",
             *stop_note, *args.notes]
    text = '\n'.join([
        f'# {args.title}', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run, '
        f'{PARALLEL_RUNS} runs at a time (one per core); `{args.config}` zoo config'
        + (f" with {', '.join(merge_overrides([], args.extra_sets))}" if args.extra_sets else ' as shipped') + '.',
        '', markdown_table({'tidal': row}, marks), '', *published,
        'Notes:', *(f'- {note}' for note in notes),
        '', 'Repeat a run from the repo root with:', '', '```', commands[args.seeds[0]], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def published_table(curve: dict[int, float], label: str, marks: list[int]) -> list[str]:
    """The published curve's value at each milestone (its last point at or before it) as table lines."""
    cells = []
    for mark in marks:
        found = published_at(curve, mark)
        cells.append('n/a' if found is None else
                     f'{found[1]:.1f}' + ('' if found[0] == mark else f' (at {fmt_steps(found[0])})'))
    return ['| published | ' + ' | '.join(fmt_steps(m) for m in marks) + ' |', '|---|' + '---|' * len(marks),
            f'| {label} | ' + ' | '.join(cells) + ' |', '']


def main(argv: list[str] | None = None, **defaults: object) -> None:
    """Trains (unless --report-only) and writes the outputs; `defaults` as `parse_args` takes them."""
    args = parse_args(argv, defaults)
    overrides = merge_overrides(FULL_BUDGET if args.full_budget else [], args.extra_sets)
    policy_type, env_id = policy_and_env(args.config, overrides)
    if args.title is None:
        args.title = f'{policy_type} on {env_id} (tidal)'
    run_dirs = {seed: args.out / 'runs' / f'tidal_seed{seed}' for seed in args.seeds}
    jobs = {seed: Job(f'tidal seed {seed}', tidal_train_command(args.config, seed, args.steps, run_dir, overrides),
                      run_dir) for seed, run_dir in run_dirs.items()}
    if not args.report_only:
        for i in range(0, len(args.seeds), PARALLEL_RUNS):
            batch = args.seeds[i:i + PARALLEL_RUNS]
            run_batch(f'seeds {batch}: {args.steps} env steps', [jobs[seed] for seed in batch], args.threads,
                      pin=not args.no_pin)
    print('\n' + build_report(args, jobs, env_id))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
