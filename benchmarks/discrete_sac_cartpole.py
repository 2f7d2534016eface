"""Learning-curve benchmark of tidal's discrete SAC on CartPole-v1 (tidal only: SB3 has no discrete SAC).

Runs the `cartpole_discrete_sac` zoo config as shipped (plus any `--set` overrides) for each seed,
two seeds at a time, one per core, and writes `results.json`, `curves.png` and `table.md`.

    python benchmarks/discrete_sac_cartpole.py [--seeds 0 1 2] [--steps 20000] [--threads 1]
"""
import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, display_path, merge_overrides, read_run, run_together, shown_command,
                    tidal_train_command)
from report import library_row, markdown_table, milestones, plot_curves

FULL_BUDGET = ['env.stop_value=null']  # run every step of the budget: the zoo config stops at 475
TIDAL_CONFIG = 'cartpole_discrete_sac'
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 2000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=20_000, help='env steps per run')
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None,
                        help='output folder (default: benchmarks/results/discrete_sac_cartpole, or ..._quick)')
    parser.add_argument('--quick', action='store_true', help=f'smoke test: {QUICK_STEPS} steps, first seed only')
    parser.add_argument('--set', dest='extra_sets', action='append', default=[], metavar='KEY=VALUE',
                        help='tidal config override, repeatable')
    parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = QUICK_STEPS, args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('discrete_sac_cartpole_quick' if args.quick else 'discrete_sac_cartpole')
    return args


def build_report(args: argparse.Namespace, jobs: dict[int, Job]) -> str:
    """Reads the run folders, writes results.json, curves.png and table.md; returns the table text."""
    runs = [read_run(jobs[seed].run_dir) for seed in args.seeds]
    marks = milestones(args.steps)
    row = library_row(runs, marks)
    commands = {seed: shown_command(job.cmd, args.threads) for seed, job in jobs.items()}
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({'tidal discrete SAC': runs}, args.out / 'curves.png',
                f'Discrete SAC on CartPole-v1, {len(args.seeds)} seed(s): median, min-max band')
    results = {'benchmark': 'discrete_sac_cartpole', 'env_id': 'CartPole-v1', 'steps': args.steps,
               'seeds': args.seeds, 'threads': args.threads, 'milestones': marks, 'versions': vers,
               'commands': commands, 'table': row, 'runs': dict(zip(args.seeds, runs))}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    text = '\n'.join([
        '# Discrete SAC on CartPole-v1 (tidal)', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run, '
        f'{PARALLEL_RUNS} runs at a time (one per core); `{TIDAL_CONFIG}` zoo config'
        + (f" with {', '.join(merge_overrides([], args.extra_sets))}" if args.extra_sets else ' as shipped') + '.',
        '', markdown_table({'tidal': row}, marks), '',
        'Notes:',
        '- Returns are medians over seeds of the last evaluation at or before each milestone ("at ..." '
        'names the env step when it differs); the maximum return on CartPole-v1 is 500.',
        '- Wall clock runs from the start of training to its end and includes evaluation.',
        f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.",
        '', 'Repeat a run from the repo root with:', '', '```', commands[args.seeds[0]], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    overrides = merge_overrides(FULL_BUDGET, args.extra_sets)
    run_dirs = {seed: args.out / 'runs' / f'tidal_seed{seed}' for seed in args.seeds}
    jobs = {seed: Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, run_dir, overrides),
                      run_dir) for seed, run_dir in run_dirs.items()}
    if not args.report_only:
        for i in range(0, len(args.seeds), PARALLEL_RUNS):
            batch = args.seeds[i:i + PARALLEL_RUNS]
            print(f'\n== seeds {batch}: {args.steps} env steps', flush=True)
            for seed in batch:
                print(f'$ {shown_command(jobs[seed].cmd, args.threads)}', flush=True)
            run_together([jobs[seed] for seed in batch], args.threads, pin=not args.no_pin)
    print('\n' + build_report(args, jobs))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
