"""A seed group (`tidal train CONFIG --seeds N`) against one process per seed, side by side.

For a zoo config (`cartpole_ppo`: PPO, CartPole-v1, 64x64 networks, minibatches of 128; `pendulum_sac`: SAC,
256x256 networks, batches of 256), the same seeds with the same budget, every run to its budget (the stop value
is switched off):
1. separate: `tidal train CONFIG -s K` for K in 0..N-1, two processes at a time, one core and one torch thread
   each: the way seeds are run without a group;
2. grouped: `tidal train CONFIG --seeds N` as it picks its split (one process per usable core, each stacking its
   share of the seeds or, for an update too large for stacking to pay on a CPU, training them in turn; one torch
   thread each); grouped_stacked: the same split with every process stacking (`seed_group.share=stacked`);
3. grouped_1p: the group in one process with one torch thread (`--processes 1`), and grouped_2t: one process
   with two torch threads; grouped_4p: four processes, two per core (where the split stops paying).
Reported: wall clock from the first start to the last end, env steps/s over all seeds, learner updates/s,
the final eval returns (median, IQM with its 95% interval) of each side, and whether each seed's
eval returns agree between the sides (they should, to the last evaluation).

Outputs in `benchmarks/results/seed_group/` (`seed_group_<config>/` for another config): `results.json`,
`table.md`, `curves.png` (the runs under `runs/`).

    python benchmarks/seed_group.py [--config cartpole_ppo] [--seeds 8] [--steps 20480] [--report-only]
    python benchmarks/seed_group.py --config pendulum_sac --seeds 8 --steps 5000
    python benchmarks/seed_group.py --sides grouped    # one side again, beside the others of walls.json
    python benchmarks/seed_group.py --config hopper_td3_bc --train-iter 2000 \
        --set policy.collect.data_path=mujoco/hopper/medium-v0    # an offline config: its budget in updates
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from common import BENCH_DIR, TIDAL_CMD, Job, display_path, read_evals, run_lanes, shown_command, tidal_train_command
from report import plot_curves, seed_summary

OVERRIDES = ['env.stop_value=1000000']  # every run spends its whole budget, so the sides do equal work
#: the grouped sides: (processes, torch threads per process, label, overrides); processes 0 is the group's own
#: choice
GROUPED = {'grouped': (0, 1, 'its own split: one process per core', ()),
           'grouped_stacked': (0, 1, 'one process per core, each stacking its seeds', ('seed_group.share=stacked',)),
           'grouped_1p': (1, 1, '1 process, 1 thread', ()), 'grouped_2t': (1, 2, '1 process, 2 threads', ()),
           'grouped_4p': (4, 1, '4 processes, 2 per core', ())}
SIDES = ('separate', *GROUPED)
DEFAULT_SIDES = ('separate', 'grouped', 'grouped_1p')
RETURN_RTOL = 1e-6  # eval returns of the same run on both sides agree to this


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default='cartpole_ppo', help='zoo config of both sides')
    parser.add_argument('--seeds', type=int, default=8)
    parser.add_argument('--steps', type=int, default=20480, help='env steps per seed')
    parser.add_argument('--train-iter', type=int, help="gradient steps per seed instead (an offline config's budget)")
    parser.add_argument('--set', dest='extra_sets', action='append', default=[], metavar='KEY=VALUE',
                        help='a config override of both sides (an offline config\'s dataset, say); repeatable')
    parser.add_argument('--out', type=Path, help='results folder (default: results/seed_group[_CONFIG])')
    parser.add_argument('--report-only', action='store_true', help='rebuild the report from finished runs')
    parser.add_argument('--sides', nargs='+', choices=SIDES, default=None,
                        help=f'measure these sides (again), the others as walls.json has them (default: the sides '
                             f'{", ".join(DEFAULT_SIDES)}, afresh)')
    args = parser.parse_args(argv)
    if args.out is None:
        suffix = '' if args.config == 'cartpole_ppo' else f'_{args.config}'
        args.out = BENCH_DIR / 'results' / f'seed_group{suffix}'
    return args


def budget(args: argparse.Namespace) -> tuple[str, int]:
    """(option, value) of each run's budget: env steps, or an offline config's gradient steps."""
    return ('--max-train-iter', args.train_iter) if args.train_iter else ('--max-env-step', args.steps)


def group_command(args: argparse.Namespace, run_dir: Path, processes: int, threads: int,
                  extra: tuple[str, ...] = ()) -> list[str]:
    """A grouped side: `processes` processes (0: the group's choice), `threads` torch threads each (the config's
    `torch_threads`, 1 by default, would override the thread count of the environment)."""
    option, value = budget(args)
    cmd = [*TIDAL_CMD, 'train', args.config, '--seeds', str(args.seeds), option, str(value),
           '--exp-name', display_path(run_dir), '--no-progress', '--set', f'torch_threads={threads}']
    if processes:
        cmd += ['--processes', str(processes)]
    for item in (*OVERRIDES, *args.extra_sets, *extra):
        cmd += ['--set', item]
    return cmd


def separate_command(args: argparse.Namespace, seed: int, run_dir: Path) -> list[str]:
    option, value = budget(args)
    return tidal_train_command(args.config, seed, value, run_dir, (*OVERRIDES, *args.extra_sets), budget=option)


def timed(title: str, lanes: list[list[Job]], threads: int, pin: bool = True) -> float:
    print(f'\n== {title}', flush=True)
    for lane in lanes:
        for job in lane:
            print(f'$ {shown_command(job.cmd, threads)}', flush=True)
    start = time.perf_counter()
    run_lanes(lanes, threads, pin=pin)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict[str, float]:
    walls_file = args.out / 'walls.json'
    again = args.sides is not None and walls_file.is_file()
    walls = json.loads(walls_file.read_text()) if again else {}
    args.sides = args.sides or list(DEFAULT_SIDES)
    if 'separate' in args.sides:
        separate = [Job(f'seed {seed}', separate_command(args, seed, args.out / 'runs' / 'separate' / f'seed_{seed}'),
                        args.out / 'runs' / 'separate' / f'seed_{seed}') for seed in range(args.seeds)]
        walls['separate'] = timed(f'{args.seeds} processes, two at a time, one core each',
                                  [separate[0::2], separate[1::2]], threads=1)
    for side, (processes, threads, label, extra) in GROUPED.items():
        if side not in args.sides:
            continue
        run_dir = args.out / 'runs' / side
        job = Job(f'--seeds {args.seeds}', group_command(args, run_dir, processes, threads, extra), run_dir)
        # not pinned: the group's processes spread over the cores themselves
        walls[side] = timed(f'--seeds {args.seeds}, {label}', [[job]], threads=threads, pin=False)
    walls_file.write_text(json.dumps(walls, indent=2) + '\n')
    return walls


def side_runs(out: Path, side: str, seeds: int) -> list[dict]:
    runs = []
    for seed in range(seeds):
        run_dir = out / 'runs' / side / f'seed_{seed}'
        summary = json.loads((run_dir / 'summary.json').read_text())
        runs.append({'evals': read_evals(run_dir), 'summary': summary})
    return runs


def equal_until(evals: list[dict], reference: list[dict], clock: str) -> int:
    """The last env step (or train iteration, `clock`) up to which two runs' eval returns agree to 1e-6 (relative):
    the same run until then, up to the last bits of a stacked matmul's continuous actions."""
    last = -1
    for row, other in zip(evals, reference):
        if not math.isclose(row['return_mean'], other['return_mean'], rel_tol=RETURN_RTOL):
            break
        last = row[clock]
    return last


def report(args: argparse.Namespace) -> None:
    walls = json.loads((args.out / 'walls.json').read_text())
    sides = {side: side_runs(args.out, side, args.seeds) for side in SIDES if side in walls}
    option, value = budget(args)
    clock = 'train_iter' if args.train_iter else 'env_step'
    results = {'config': args.config, 'seeds': args.seeds, 'budget': {option: value}, 'overrides': args.extra_sets,
               'sides': {}}
    for side, runs in sides.items():
        env_steps = sum(run['summary']['env_step'] for run in runs)
        updates = sum(run['summary']['train_iter'] for run in runs)
        finals = [run['evals'][-1]['return_mean'] for run in runs]
        results['sides'][side] = {
            'wall_s': walls[side], 'env_steps_per_s': env_steps / walls[side], 'updates_per_s': updates / walls[side],
            'final_return': seed_summary(finals), 'finals': finals,
            'equal_evals_until': [equal_until(run['evals'], separate['evals'], clock)
                                  for run, separate in zip(runs, sides['separate'])]}
    base = results['sides']['separate']['wall_s']
    for side in results['sides'].values():
        side['throughput_vs_separate'] = base / side['wall_s']
    (args.out / 'results.json').write_text(json.dumps(results, indent=2) + '\n')
    labels = {'separate': f'{args.seeds} processes, 2 at a time (1 core each)',
              **{side: f'--seeds {args.seeds}, {label}' for side, (_, _, label, _) in GROUPED.items()}}
    lines = ['| side | wall clock | env steps/s (all seeds) | updates/s | throughput vs separate | final eval return: '
             'median, IQM [95% CI] | eval returns equal to the separate runs\' (to 1e-6) up to (median over seeds) |', '|---|---|---|---|---|---|---|']
    for side, row in results['sides'].items():
        final = row['final_return']
        low, high = final['ci']
        until = statistics.median(row['equal_evals_until'])
        lines.append(f"| {labels[side]} | {row['wall_s']:.0f} s | {row['env_steps_per_s']:.0f} | "
                     f"{row['updates_per_s']:.0f} | {row['throughput_vs_separate']:.2f}x | {final['median']:.1f}, "
                     f"{final['iqm']:.1f} [{low:.1f}, {high:.1f}] | {until:.0f} {clock.replace('_', ' ')}s |")
    (args.out / 'table.md').write_text('\n'.join(lines) + '\n')
    plot_curves({labels[side]: runs for side, runs in sides.items()}, args.out / 'curves.png',
                f'{args.config}, {args.seeds} seeds: grouped vs separate')
    print('\n'.join(lines))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run(args)
    report(args)


if __name__ == '__main__':
    sys.exit(main())
