"""Offline to online on Hopper-v5: IQL learnt from the medium dataset, then going on online, against SAC from scratch.

For each seed, `hopper_iql` first learns offline from `mujoco/hopper/medium-v0` (the dataset `offline_hopper.py
--build` builds) for `--offline-steps` gradient steps, two seeds at a time. Then `hopper_iql_online` goes on from
its checkpoint, the dataset in its replay, one update per env step and no random warm-up, side by side with
`hopper_sac` (SB3 zoo's settings, 10k random warm-up steps) starting from nothing, one per core, for the same
`--steps` env steps; both evaluate their deterministic policy on the same env-step schedule. `--arm` runs one arm
alone (SAC's needs no dataset, so it can go first), two runs at a time.

    python benchmarks/offline_to_online.py [--seeds 0 1 2] [--steps 30000] [--offline-steps 5000] [--arm sac]
        [--report-only]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

from common import (Job, benchmark_args, benchmark_parser, display_path, read_run, run_in_twos,
                    run_pairs_then_rest, shown_command, tidal_train_command)
from offline_hopper import DATASETS
from report import arms_report

LABELS = {'iql_online': 'IQL offline, then online', 'sac': 'SAC from scratch'}
DATASET = 'mujoco/hopper/medium-v0'


def evaluations(every: int) -> tuple[str, ...]:
    """Both arms evaluate every `every` env steps and never by train iterations."""
    return 'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={every}'


def offline_jobs(args: argparse.Namespace) -> list[Job]:
    dirs = {seed: args.out / 'runs' / f'iql_offline_seed{seed}' for seed in args.seeds}
    sets = (f'policy.collect.data_path={DATASET}', 'env.stop_value=null')
    return [Job(f'iql offline seed {seed}', [*tidal_train_command('hopper_iql', seed, args.offline_steps, dirs[seed],
                                                                  sets, budget='--max-train-iter'), '--no-progress'],
                dirs[seed]) for seed in args.seeds]


def online_jobs(args: argparse.Namespace) -> dict[int, dict[str, Job]]:
    runs, found = args.out / 'runs', {}
    for index, seed in enumerate(args.seeds):
        common = ('env.stop_value=null', *evaluations(args.eval_every))
        iql = (*common, f'policy.collect.data_path={DATASET}',
               f'policy.learn.init_checkpoint={display_path(runs / f"iql_offline_seed{seed}")}')
        found[index] = {arm: Job(f'{arm} seed {seed}', [*tidal_train_command(config, seed, args.steps,
                                                                             runs / f'{arm}_seed{seed}', sets),
                                                        '--no-progress'], runs / f'{arm}_seed{seed}')
                        for arm, config, sets in (('iql_online', 'hopper_iql_online', iql), ('sac', 'hopper_sac', common))}
    return found


def report(args: argparse.Namespace, offline: list[Job], online: dict[int, dict[str, Job]]) -> str:
    runs = {arm: [read_run(pair[arm].run_dir) for pair in online.values()] for arm in LABELS}
    offline_returns = [read_run(job.run_dir)['evals'][-1]['return_mean'] for job in offline]
    text = arms_report(args.out, 'Hopper-v5: IQL offline on medium, then online, vs SAC from scratch', LABELS, runs,
                       args.steps,
                       {'benchmark': 'offline_to_online', 'seeds': args.seeds, 'dataset': DATASET,
                        'offline_steps': args.offline_steps, 'offline_final_returns': offline_returns,
                        'commands': {'iql_offline': shown_command(offline[0].cmd, 1),
                                     **{arm: shown_command(online[0][arm].cmd, 1) for arm in LABELS}}})
    text += (f'\nIQL offline, final return before going online: median {statistics.median(offline_returns):.1f} '
             f'({", ".join(f"{value:.1f}" for value in offline_returns)}).\n')
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, 30_000, 1000)
    parser.add_argument('--offline-steps', type=int, default=5000)
    parser.add_argument('--eval-every', type=int, default=2500)
    parser.add_argument('--arm', choices=tuple(LABELS), help="this arm's runs alone (IQL's with its offline runs first)")
    args = benchmark_args(parser, argv, 'offline_to_online')
    if args.quick:
        args.offline_steps, args.eval_every = 50, 500
    os.environ['MINARI_DATASETS_PATH'] = str(DATASETS)
    offline, online = offline_jobs(args), online_jobs(args)
    if args.arm == 'sac':  # SAC needs no dataset: its runs may go first, two at a time
        run_in_twos('sac', [pair['sac'] for pair in online.values()])
    elif args.arm == 'iql_online':
        run_in_twos('iql offline', offline)
        run_in_twos('iql online', [pair['iql_online'] for pair in online.values()])
    elif not args.report_only:
        run_in_twos('iql offline', offline)
        run_pairs_then_rest(online, ('iql_online', 'sac'))
    print(report(args, offline, online))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
