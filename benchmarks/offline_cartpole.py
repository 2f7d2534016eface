"""Discrete offline RL on locally built CartPole-v1 datasets: discrete CQL against behaviour cloning, tidal alone.

The datasets are the Minari datasets `tidal build-datasets cartpole_dqn` builds (`tidal/cartpole/<level>-v0` under
MINARI_DATASETS_PATH; `--build` makes them: a DQN expert of at most `--expert-steps` env steps, levels of
`--transitions` transitions each). `cartpole_discrete_cql` (DI-engine's cartpole_cql settings on DQN) and
`cartpole_bc` (discrete behaviour cloning on the same network) learn each level for the same number of gradient
steps, two runs at a time, one per core, and evaluate their greedy policy on the same schedule; scores are D4RL's
normalised score with the dataset's reference returns (the DQN expert's last evaluation is 100, random actions 0).

    python benchmarks/offline_cartpole.py [--build] [--levels medium-expert medium-replay expert] [--seeds 0 1 2]
        [--steps 5000] [--report-only]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from common import (BENCH_DIR, REPO_ROOT, TIDAL_CMD, Job, benchmark_args, benchmark_parser, display_path, read_run,
                    run_in_twos, shown_command, tidal_train_command)
from offline_hopper import OFFLINE_AXES, scored
from report import arms_report

PREFIX = 'tidal/cartpole'
ALGOS = {'discrete_cql': 'cartpole_discrete_cql', 'bc': 'cartpole_bc'}  # arm -> zoo config
DATASETS = BENCH_DIR / 'results' / 'offline_cartpole' / 'datasets'


def build(args: argparse.Namespace) -> None:
    cmd = [*TIDAL_CMD, 'build-datasets', 'cartpole_dqn', '--max-env-step', str(args.expert_steps), '--transitions',
           str(args.transitions), '--runs-dir', display_path(DATASETS.parent / 'dataset_runs'), '--no-progress']
    print('$', shown_command(cmd, 1), flush=True)
    subprocess.run(cmd, check=True, cwd=REPO_ROOT, env={**os.environ, 'MINARI_DATASETS_PATH': str(DATASETS)})


def reference_scores(level: str) -> tuple[float, float, int]:
    """(random return, expert return, transitions) of a level's dataset."""
    import minari
    dataset = minari.load_dataset(f'{PREFIX}/{level}-v0')
    metadata = dataset.storage.metadata
    return float(metadata['ref_min_score']), float(metadata['ref_max_score']), int(dataset.total_steps)


def jobs_of(args: argparse.Namespace) -> dict[tuple[str, str], list[Job]]:
    """(level, arm) -> one job per seed."""
    jobs = {}
    for level in args.levels:
        for arm, config in ALGOS.items():
            sets = (f'policy.collect.data_path={PREFIX}/{level}-v0', f'policy.eval.evaluator.eval_freq={args.eval_every}')
            dirs = {seed: args.out / level / 'runs' / f'{arm}_seed{seed}' for seed in args.seeds}
            jobs[level, arm] = [Job(f'{level} {arm} seed {seed}',
                                    [*tidal_train_command(config, seed, args.steps, dirs[seed], sets,
                                                          budget='--max-train-iter'), '--no-progress'], dirs[seed])
                                for seed in args.seeds]
    return jobs


def report(args: argparse.Namespace, jobs: dict[tuple[str, str], list[Job]]) -> str:
    lines = [f'# Discrete offline RL on CartPole-v1: {args.steps} gradient steps, {len(args.seeds)} seeds', '',
             '| dataset | transitions | arm | final normalised score, median (range) | wall clock (s), median |',
             '|---|---|---|---|---|']
    for level in args.levels:
        low, high, transitions = reference_scores(level)
        runs = {arm: [scored(read_run(job.run_dir), low, high) for job in jobs[level, arm]] for arm in ALGOS}
        arms_report(args.out / level, f'{PREFIX}/{level}-v0 (normalised score)', {arm: arm for arm in ALGOS}, runs,
                    args.steps, {'benchmark': f'offline_cartpole_{level}', 'dataset': f'{PREFIX}/{level}-v0',
                                 'reference_returns': [low, high], 'transitions': transitions, 'seeds': args.seeds,
                                 'commands': {arm: shown_command(jobs[level, arm][0].cmd, 1) for arm in ALGOS}},
                    axes=OFFLINE_AXES)
        for arm in ALGOS:
            finals = [run['evals'][-1]['return_mean'] for run in runs[arm]]
            wall = statistics.median(run['summary']['wall_time'] for run in runs[arm])
            lines.append(f'| {level} | {transitions} | {arm} | {statistics.median(finals):.1f} ({min(finals):.1f} to '
                         f'{max(finals):.1f}) | {wall:.0f} |')
    text = '\n'.join(lines) + '\n'
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, 5000, 200)
    parser.add_argument('--levels', nargs='+', default=['medium-expert', 'medium-replay', 'expert'])
    parser.add_argument('--eval-every', type=int, default=1000)
    parser.add_argument('--build', action='store_true', help='build the datasets first')
    parser.add_argument('--expert-steps', type=int, default=50_000)
    parser.add_argument('--transitions', type=int, default=20_000)
    args = benchmark_args(parser, argv, 'offline_cartpole')
    if args.quick:
        args.eval_every = args.steps // 2
    if args.build:
        build(args)
    os.environ['MINARI_DATASETS_PATH'] = str(DATASETS)
    jobs = jobs_of(args)
    if not args.report_only:
        run_in_twos('tidal', [job for seeds in jobs.values() for job in seeds])
    print(report(args, jobs))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
