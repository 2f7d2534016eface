"""n-step SAC (policy.nstep = 3) against one-step SAC on Hopper-v5, at equal env steps, side by side.

Both arms run tidal's `hopper_sac` (SB3 zoo's Hopper settings: one env, [256, 256] networks, batch 256, lr 3e-4,
10k random warm-up steps, one update per env step, gamma 0.99) with 5 greedy evaluation episodes every 5000 env
steps; the only difference is `policy.nstep`. For each seed the two arms start together, one per core.

    python benchmarks/nstep_sac_hopper.py [--nstep 3] [--seeds 0 1 2] [--steps 60000] [--quick] [--report-only]
"""
from __future__ import annotations

import argparse
import sys

from common import (Job, benchmark_args, benchmark_parser, read_run, run_pairs_then_rest, shown_command,
                    tidal_train_command)
from report import arms_report, curve_mean

CONFIG = 'hopper_sac'
EVAL_EVERY, EVAL_EPISODES = 5000, 5
COMMON = ['env.evaluator_env_num=1', f'env.n_evaluator_episode={EVAL_EPISODES}', 'env.stop_value=null',
          'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={EVAL_EVERY}']


def arms(nstep: int) -> dict[str, str]:
    return {'one_step': 'SAC, 1-step targets', 'nstep': f'SAC, {nstep}-step targets'}


def jobs_of(args: argparse.Namespace) -> dict[int, dict[str, Job]]:
    runs = args.out / 'runs'
    found = {}
    for seed in args.seeds:
        found[seed] = {}
        for arm, nstep in (('one_step', 1), ('nstep', args.nstep)):
            run_dir = runs / f'{arm}_seed{seed}'
            command = tidal_train_command(CONFIG, seed, args.steps, run_dir, [*COMMON, f'policy.nstep={nstep}'])
            found[seed][arm] = Job(f'{arm} seed {seed}', command, run_dir)
    return found


def report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    names = arms(args.nstep)
    runs = {arm: [read_run(jobs[seed][arm].run_dir) for seed in args.seeds] for arm in names}
    results = {'benchmark': 'nstep_sac_hopper', 'nstep': args.nstep, 'seeds': args.seeds,
               'mean_return_over_run': {arm: [curve_mean(run['evals'], args.steps) for run in runs[arm]]
                                        for arm in names},
               'commands': {arm: shown_command(jobs[args.seeds[0]][arm].cmd, 1) for arm in names}}
    return arms_report(args.out, f'SAC on Hopper-v5: 1-step against {args.nstep}-step targets', names, runs,
                       args.steps, results)



def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, 60_000, 11_000)
    parser.add_argument('--nstep', type=int, default=3)
    args = benchmark_args(parser, argv, 'nstep_sac_hopper')
    jobs = jobs_of(args)
    if not args.report_only:
        run_pairs_then_rest(jobs, ('one_step', 'nstep'))
    print(report(args, jobs))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
