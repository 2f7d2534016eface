"""Multi-agent SAC on MPE simple_spread (PettingZoo, 3 agents): centralised critics against independent learners
and a uniform random policy (tidal only).

Variants, each over seeds, two runs at a time (one per core), for the same env-step budget:
- `mpe_spread_discrete_sac` and `mpe_spread_sac`: MASAC, a shared actor and twin critics on the global state;
- the discrete config with `policy.model.global_critic=false`: independent SAC per agent (shared weights,
  each agent's critic on its own observation);
- a uniform random policy, measured once over `--random-episodes` episodes.
The return is the episode's reward summed over the agents (25 steps). Writes `results.json`, `curves.png`
and `table.md` in `benchmarks/results/masac_mpe/`.

    python benchmarks/masac_mpe.py [--seeds 0 1 2] [--steps 300000]
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from common import (BENCH_DIR, Job, check_tidal_config, display_path, read_run, run_lanes, shown_command,
                    tidal_train_command)
from report import curve_mean, fmt_steps, library_row, markdown_table, milestones, plot_curves

FULL_BUDGET = ['env.stop_value=null']
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 8000
# label -> (zoo config, overrides)
VARIANTS = {
    'MASAC (discrete)': ('mpe_spread_discrete_sac', []),
    'MASAC (continuous)': ('mpe_spread_sac', []),
    'independent SAC (discrete)': ('mpe_spread_discrete_sac', ['policy.model.global_critic=false']),
}
RUN_NAMES = {'MASAC (discrete)': 'masac_discrete', 'MASAC (continuous)': 'masac_continuous',
             'independent SAC (discrete)': 'independent_discrete'}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=300_000)
    parser.add_argument('--random-episodes', type=int, default=200)
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None, help='output folder (default: benchmarks/results/masac_mpe)')
    parser.add_argument('--quick', action='store_true', help=f'smoke test: {QUICK_STEPS} steps, first seed only')
    parser.add_argument('--report-only', action='store_true', help='rebuild the outputs from the run folders')
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = QUICK_STEPS, args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('masac_mpe_quick' if args.quick else 'masac_mpe')
    return args


def job(args: argparse.Namespace, label: str, seed: int) -> Job:
    config, overrides = VARIANTS[label]
    run_dir = args.out / 'runs' / f'{RUN_NAMES[label]}_seed{seed}'
    return Job(f'{RUN_NAMES[label]} seed {seed}',
               tidal_train_command(config, seed, args.steps, run_dir, [*FULL_BUDGET, *overrides]), run_dir)


def random_return(episodes: int, seed: int = 0) -> dict:
    """Mean and std of the summed episode return of uniform random actions (discrete simple_spread)."""
    from mpe2 import simple_spread_v3
    env = simple_spread_v3.parallel_env(N=3, max_cycles=25)
    rng = np.random.default_rng(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total = 0.0
        while env.agents:
            actions = {agent: int(rng.integers(env.action_space(agent).n)) for agent in env.agents}
            _, rewards, _, _, _ = env.step(actions)
            total += sum(rewards.values())
        returns.append(total)
    return {'mean': float(np.mean(returns)), 'std': float(np.std(returns)), 'episodes': episodes}


def build_report(args: argparse.Namespace, random: dict) -> str:
    marks = milestones(args.steps)
    runs = {label: [read_run(job(args, label, seed).run_dir) for seed in args.seeds] for label in VARIANTS}
    rows = {label: library_row(runs[label], marks) for label in runs}
    plot_curves(runs, args.out / 'curves.png', 'MPE simple_spread, 3 agents (median, min-max band)',
                ylabel='eval return (sum over agents)', references={'uniform random': random['mean']})
    means = {label: [curve_mean(run['evals'], args.steps) for run in runs[label]] for label in runs}
    finals = {label: [run['evals'][-1]['return_mean'] for run in runs[label]] for label in runs}
    lines = ['| variant | final return | mean eval return over the run |', '|---|---|---|']
    for label in runs:
        lines.append(f'| {label} | {statistics.median(finals[label]):.1f} (' + ', '.join(f'{v:.1f}' for v in finals[label])
                     + f') | {statistics.median(means[label]):.1f} |')
    lines.append(f"| uniform random | {random['mean']:.1f} (std {random['std']:.1f}, {random['episodes']} episodes) | |")
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'pettingzoo', 'mpe2')}
    results = {'benchmark': 'masac_mpe', 'seeds': args.seeds, 'steps': args.steps, 'versions': vers,
               'random': random, 'table': rows, 'final_returns': finals, 'mean_eval_return': means,
               'commands': {label: shown_command(job(args, label, args.seeds[0]).cmd, args.threads) for label in runs},
               'runs': {label: dict(zip(args.seeds, runs[label])) for label in runs}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join([
        f'# MASAC on MPE simple_spread, {args.steps} env steps ({fmt_steps(args.steps)})', '',
        f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, {PARALLEL_RUNS} runs at a time. Return: the '
        'episode reward summed over the 3 agents (25 steps), deterministic evaluation on 32 episodes (the zoo configs\' n_evaluator_episode).', '',
        markdown_table(rows, marks, first_column='variant'), '', '\n'.join(lines), '', '![curves](curves.png)', '',
        f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, pettingzoo {vers['pettingzoo']}, mpe2 {vers['mpe2']}.",
        '', 'Commands (first seed), from the repo root:', '', '```', *results['commands'].values(), '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report_only:
        for config, overrides in VARIANTS.values():
            check_tidal_config(config, [*FULL_BUDGET, *overrides])
        ordered = [job(args, label, seed) for seed in args.seeds for label in VARIANTS]
        for item in ordered:
            print(f'$ {shown_command(item.cmd, args.threads)}', flush=True)
        run_lanes([ordered[0::PARALLEL_RUNS], ordered[1::PARALLEL_RUNS]], args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    print('\n' + build_report(args, random_return(args.random_episodes)))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
