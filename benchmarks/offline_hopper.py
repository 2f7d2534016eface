"""Offline RL on locally built D4RL-like Hopper-v5 datasets: tidal against d3rlpy 2.8 side by side.

The datasets are Minari datasets that `tidal build-datasets` builds from SAC runs (`mujoco/hopper/<level>-v0` under
MINARI_DATASETS_PATH; `--build` makes them: a SAC expert of `--expert-steps` env steps, levels of `--transitions`
transitions each). Both sides read the same transitions: tidal the Minari dataset, d3rlpy the same episodes exported
to numpy arrays (observations, actions, rewards, terminals, timeouts). Each algorithm takes tidal's defaults on
both sides (d3rlpy configured to match: `d3rlpy_offline_runner.py`); both normalise observations by the dataset's
statistics except ReBRAC, which does not on either side. For each (level, algorithm, seed) the two sides start
together, one per core, for the same number of gradient steps, and evaluate the deterministic policy on the same
schedule; scores are D4RL's normalised score with the dataset's reference returns.

    python benchmarks/offline_hopper.py [--levels medium medium-replay] [--algos td3_bc iql cql] [--seeds 0 1 2]
        [--steps 10000] [--build] [--report-only]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from common import (BENCH_DIR, REPO_ROOT, TIDAL_CMD, Job, benchmark_args, benchmark_parser, display_path,
                    ensure_d3rlpy_venv, read_run, run_in_twos, run_pairs_then_rest, shown_command)
from report import arms_report

#: The curves' axes of an offline run: its gradient steps, its normalised score.
OFFLINE_AXES = ('gradient steps', 'normalised score (deterministic)')

ENV_ID = 'Hopper-v5'
PREFIX = 'mujoco/hopper'
LIBRARIES = {'tidal': 'tidal', 'd3rlpy': 'd3rlpy 2.8.1'}
DATASETS = BENCH_DIR / 'results' / 'offline_hopper' / 'datasets'


def build(args: argparse.Namespace) -> None:
    """`tidal build-datasets hopper_sac` into DATASETS (its runs beside it)."""
    cmd = [*TIDAL_CMD, 'build-datasets', 'hopper_sac', '--max-env-step', str(args.expert_steps), '--transitions',
           str(args.transitions), '--runs-dir', display_path(DATASETS.parent / 'dataset_runs'), '--no-progress']
    if args.expert_run:
        cmd += ['--expert-run', args.expert_run]
    print('$', shown_command(cmd, 1), flush=True)
    subprocess.run(cmd, check=True, cwd=REPO_ROOT, env={**os.environ, 'MINARI_DATASETS_PATH': str(DATASETS)})


def export(level: str, out: Path) -> dict:
    """The Minari dataset of `level` as d3rlpy's arrays in `out` (.npz); returns its reference returns and size."""
    import minari
    os.environ['MINARI_DATASETS_PATH'] = str(DATASETS)
    dataset = minari.load_dataset(f'{PREFIX}/{level}-v0')
    episodes = list(dataset.iterate_episodes())
    arrays = {'observations': np.concatenate([e.observations[:-1] for e in episodes]).astype(np.float32),
              'actions': np.concatenate([e.actions for e in episodes]).astype(np.float32),
              'rewards': np.concatenate([e.rewards for e in episodes]).astype(np.float32),
              'terminals': np.concatenate([e.terminations for e in episodes]).astype(np.float32),
              'timeouts': np.concatenate([e.truncations for e in episodes]).astype(np.float32)}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)
    metadata = dataset.storage.metadata
    return {'ref_min_score': float(metadata['ref_min_score']), 'ref_max_score': float(metadata['ref_max_score']),
            'episodes': len(episodes), 'transitions': int(len(arrays['rewards']))}


def jobs_of(args: argparse.Namespace, python: Path) -> dict[int, dict[str, Job]]:
    found, index = {}, 0
    for level in args.levels:
        data = args.out / 'data' / f'{level}.npz'
        for algo in args.algos:
            for seed in args.seeds:
                runs = args.out / level / algo / 'runs'
                dirs = {side: runs / f'{side}_seed{seed}' for side in LIBRARIES}
                tidal = [*TIDAL_CMD, 'train', f'hopper_{algo}', '-s', str(seed), '--max-train-iter', str(args.steps),
                         '--exp-name', display_path(dirs['tidal'])]
                for item in (f'policy.collect.data_path={PREFIX}/{level}-v0', 'env.evaluator_env_num=1',
                             f'env.n_evaluator_episode={args.episodes}', f'policy.eval.evaluator.eval_freq={args.eval_every}',
                             'env.stop_value=null'):
                    tidal += ['--set', item]
                d3rlpy = [str(python), display_path(BENCH_DIR / 'd3rlpy_offline_runner.py'), '--algo', algo,
                          '--data', display_path(data), '--env-id', ENV_ID, '--seed', str(seed), '--steps',
                          str(args.steps), '--eval-every', str(args.eval_every), '--eval-episodes', str(args.episodes),
                          '--run-dir', display_path(dirs['d3rlpy'])]
                if algo == 'rebrac':
                    d3rlpy.append('--no-obs-scaling')
                found[index] = {'tidal': Job(f'{level} {algo} tidal seed {seed}', tidal, dirs['tidal']),
                                'd3rlpy': Job(f'{level} {algo} d3rlpy seed {seed}', d3rlpy, dirs['d3rlpy'])}
                index += 1
    return found


def scored(run: dict, low: float, high: float) -> dict:
    """A run with its returns as normalised scores and its gradient steps as its steps (the report's clock)."""
    evals = [{**row, 'env_step': row['train_iter'], 'return_mean': 100 * (row['return_mean'] - low) / (high - low),
              'return_std': 100 * row['return_std'] / (high - low)} for row in run['evals']]
    return {**run, 'evals': evals}


def report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]], data: dict[str, dict]) -> str:
    lines = [f'# Offline RL on Hopper-v5: tidal against d3rlpy 2.8.1, {args.steps} gradient steps', '',
             '| dataset | algorithm | tidal score, median (range) | d3rlpy score, median (range) | '
             'tidal/d3rlpy wall clock, median (per seed) |', '|---|---|---|---|---|']
    summary = {}
    for level in args.levels:
        low, high = data[level]['ref_min_score'], data[level]['ref_max_score']
        for algo in args.algos:
            picked = [arms for arms in jobs.values() if arms['tidal'].name.startswith(f'{level} {algo} ')]
            runs = {side: [scored(read_run(arms[side].run_dir), low, high) for arms in picked] for side in LIBRARIES}
            results = {'benchmark': f'offline_hopper_{level}_{algo}', 'dataset': f'{PREFIX}/{level}-v0',
                       'dataset_info': data[level], 'seeds': args.seeds,
                       'commands': {side: shown_command(picked[0][side].cmd, 1) for side in LIBRARIES}}
            arms_report(args.out / level / algo, f'{algo} on {PREFIX}/{level}-v0 (normalised score)', LIBRARIES, runs,
                        args.steps, results, axes=OFFLINE_AXES)
            finals = {side: [run['evals'][-1]['return_mean'] for run in runs[side]] for side in LIBRARIES}
            ratios = [t['summary']['wall_time'] / d['summary']['wall_time'] for t, d in zip(runs['tidal'], runs['d3rlpy'])]
            summary[f'{level}/{algo}'] = {'finals': finals, 'wall_clock_ratios': ratios}
            cells = [f'{statistics.median(finals[side]):.1f} ({min(finals[side]):.1f} to {max(finals[side]):.1f})'
                     for side in LIBRARIES]
            lines.append(f'| {level} | {algo} | {cells[0]} | {cells[1]} | {statistics.median(ratios):.2f} '
                         f'({", ".join(f"{r:.2f}" for r in ratios)}) |')
    (args.out / 'summary.json').write_text(json.dumps({'data': data, 'results': summary}, indent=1) + '\n')
    text = '\n'.join(lines) + '\n'
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, 10_000, 200)
    parser.add_argument('--levels', nargs='+', default=['medium', 'medium-replay'])
    parser.add_argument('--algos', nargs='+', default=['td3_bc', 'iql', 'cql'],
                        choices=['td3_bc', 'iql', 'cql', 'bc', 'rebrac'])
    parser.add_argument('--eval-every', type=int, default=2500)
    parser.add_argument('--episodes', type=int, default=5)
    parser.add_argument('--build', action='store_true', help='build the datasets first')
    parser.add_argument('--expert-steps', type=int, default=120_000)
    parser.add_argument('--expert-run', help='a finished SAC run to take as the expert (tidal build-datasets)')
    parser.add_argument('--transitions', type=int, default=100_000)
    parser.add_argument('--tidal-only', action='store_true',
                        help="tidal's runs alone, two at a time (no d3rlpy beside them, no wall-clock ratio)")
    args = benchmark_args(parser, argv, 'offline_hopper')
    if args.quick:
        args.eval_every = args.steps // 2
    if args.build:
        build(args)
    os.environ['MINARI_DATASETS_PATH'] = str(DATASETS)
    data = {level: export(level, args.out / 'data' / f'{level}.npz') for level in args.levels}
    if args.tidal_only:
        jobs = jobs_of(args, Path(sys.executable))
        if not args.report_only:
            run_in_twos('tidal', [arms['tidal'] for arms in jobs.values()])
        print(report_tidal(args, jobs, data))
        return
    python = ensure_d3rlpy_venv()
    jobs = jobs_of(args, python)
    if not args.report_only:
        run_pairs_then_rest(jobs, ('tidal', 'd3rlpy'))
    print(report(args, jobs, data))


def report_tidal(args: argparse.Namespace, jobs: dict[int, dict[str, Job]], data: dict[str, dict]) -> str:
    """tidal's normalised scores alone, per (level, algorithm)."""
    lines = [f'# Offline RL on Hopper-v5: tidal alone, {args.steps} gradient steps', '',
             '| dataset | algorithm | score, median (range) | wall clock (s), median |', '|---|---|---|---|']
    for level in args.levels:
        low, high = data[level]['ref_min_score'], data[level]['ref_max_score']
        for algo in args.algos:
            picked = [arms['tidal'] for arms in jobs.values() if arms['tidal'].name.startswith(f'{level} {algo} ')]
            runs = [scored(read_run(job.run_dir), low, high) for job in picked]
            arms_report(args.out / level / algo, f'{algo} on {PREFIX}/{level}-v0 (normalised score)',
                        {'tidal': 'tidal'}, {'tidal': runs}, args.steps,
                        {'benchmark': f'offline_hopper_{level}_{algo}', 'dataset': f'{PREFIX}/{level}-v0',
                         'dataset_info': data[level], 'seeds': args.seeds,
                         'commands': {'tidal': shown_command(picked[0].cmd, 1)}}, axes=OFFLINE_AXES)
            finals = [run['evals'][-1]['return_mean'] for run in runs]
            wall = statistics.median(run['summary']['wall_time'] for run in runs)
            lines.append(f'| {level} | {algo} | {statistics.median(finals):.1f} ({min(finals):.1f} to '
                         f'{max(finals):.1f}) | {wall:.0f} |')
    text = '\n'.join(lines) + '\n'
    (args.out / 'table_tidal_only.md').write_text(text)
    return text


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
