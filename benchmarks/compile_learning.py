"""Learning with a compiled update: the same seeds eager and compiled (`policy.learn.compile`), side by side.

Compiling changes the float rounding of an update, not its maths, so the compiled curves must lie within the
eager seeds' spread. Every run is `tidal train CONFIG -s SEED --set policy.learn.compile=MODE`, one lane per run
while cores last (each lane on its own cores), the rest queued. Reported: the median and the range over seeds of
each mode's final return and of its mean return over the run, whether the compiled median lies within the eager
range, and a PNG of the curves.

    python benchmarks/compile_learning.py [--config halfcheetah_sac] [--steps 30000] [--seeds 0 1 2]
        [--modes none reduce-overhead] [--device cuda] [--lanes 6] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from common import BENCH_DIR, Job, read_run, run_lanes, tidal_train_command
from report import curve_mean, plot_curves

OUT = BENCH_DIR / 'results' / 'compile_learning'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default='halfcheetah_sac')
    parser.add_argument('--steps', type=int, default=30_000)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--modes', nargs='+', default=['none', 'reduce-overhead'])
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--lanes', type=int, default=0, help='runs side by side (0: one per core, at most all runs)')
    parser.add_argument('--out', type=Path, default=OUT)
    parser.add_argument('--runs', type=Path, help='where the runs go (default: OUT/runs)')
    args = parser.parse_args(argv)
    runs = args.runs or args.out / 'runs'
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for mode in args.modes:
        for seed in args.seeds:
            run_dir = runs / f'{mode}_seed{seed}'
            # the whole budget in every run (no stop at the config's stop value), so the curves compare end to end
            overrides = [f'policy.learn.compile={mode}', f'policy.device={args.device}', 'env.stop_value=null']
            jobs.append(Job(f'{mode} seed {seed}', tidal_train_command(args.config, seed, args.steps, run_dir, overrides),
                            run_dir))
    lanes = args.lanes or min(len(jobs), len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else 1)
    run_lanes([jobs[i::lanes] for i in range(lanes)], threads=1)
    results = {mode: [read_run(runs / f'{mode}_seed{seed}') for seed in args.seeds] for mode in args.modes}
    summary = {}
    for mode, mode_runs in results.items():
        finals = [run['evals'][-1]['return_mean'] for run in mode_runs]
        means = [curve_mean(run['evals'], args.steps) for run in mode_runs]
        summary[mode] = {'final_median': statistics.median(finals), 'final_range': [min(finals), max(finals)],
                         'mean_median': statistics.median(means), 'mean_range': [min(means), max(means)],
                         'env_steps_per_s': statistics.median(run['summary']['env_steps_per_s'] for run in mode_runs)}
    eager = summary[args.modes[0]]
    lines = [f'{args.config}, {args.steps} env steps, seeds {args.seeds}, device {args.device}.', '',
             '| compile | final return, median [range] | mean return over the run, median [range] | '
             'env steps/s (median, whole run) | median within the first mode\'s range |', '|---|---|---|---|---|']
    for mode, row in summary.items():
        within = (eager['final_range'][0] <= row['final_median'] <= eager['final_range'][1]
                  and eager['mean_range'][0] <= row['mean_median'] <= eager['mean_range'][1])
        row['within_first_mode_range'] = within
        lines.append(f"| {mode} | {row['final_median']:.1f} [{row['final_range'][0]:.1f}, {row['final_range'][1]:.1f}] "
                     f"| {row['mean_median']:.1f} [{row['mean_range'][0]:.1f}, {row['mean_range'][1]:.1f}] "
                     f"| {row['env_steps_per_s']:.0f} | {'yes' if within else 'no'} |")
    (args.out / 'results.json').write_text(json.dumps(summary, indent=2) + '\n')
    (args.out / 'table.md').write_text('\n'.join(lines) + '\n')
    plot_curves({f'compile={mode}': mode_runs for mode, mode_runs in results.items()},
                args.out / 'curves.png', f'{args.config}: eager and compiled updates')
    print('\n'.join(lines))


if __name__ == '__main__':
    sys.exit(main())
