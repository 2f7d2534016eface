"""PPO and PPG with their defaults on Acrobot-v1, a task nobody tuned them for, beside Stable-Baselines3's PPO.

Every arm trains 8 envs for the same env-step budget with the library's defaults and nothing else:
- tidal `ppo` and `ppg` from the zoo configs `acrobot_ppo` / `acrobot_ppg` (env settings only), evaluated greedily
  (the default) and, for PPO, also by sampling the policy (`policy.eval.deterministic=false`);
- tidal `ppo` with its rewards scaled (`policy.normalize.reward=true`, PPG's default), the one change between the
  two defaults that matters here;
- tidal `ppo` with SB3's rollout size: SB3's `n_steps=2048` is per env (16384 env steps per rollout with 8 envs),
  tidal's `n_sample=2048` is over all envs, so with 8 envs tidal's default makes 8 times as many updates per env step;
- SB3's `PPO('MlpPolicy', env)` on 8 envs (`sb3_ppo_runner.py --n-envs 8`, in `benchmarks/.venv-sb3`), greedy.
Each tidal run's `evals.csv` also holds the return of the training episodes between evaluations (the sampling
policy's), which the table and plot show beside the eval return. Writes `results.json`, `curves.png`,
`curves_collect.png` and `table.md` in `benchmarks/results/acrobot/`.

    python benchmarks/acrobot_ppo.py [--seeds 0 1 2] [--steps 100000] [--no-sb3] [--arms ARM...]
"""
import argparse
import csv
import importlib.metadata
import json
import math
import statistics
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, benchmark_args, benchmark_parser, check_tidal_config, display_path, ensure_sb3_venv,
                    read_run, run_lanes, shown_command, tidal_train_command)
from report import (curve_mean, iqm_of, library_row, markdown_table, milestones, plot_curves, steps_cell,
                    steps_to_summary)

THRESHOLD = -100  # an Acrobot return the tuned baselines reach
FULL_BUDGET = ['env.stop_value=null']
PARALLEL_RUNS = 2
SB3_RUNNER = BENCH_DIR / 'sb3_ppo_runner.py'
SB3_ENVS = 8
# arm -> (label, tidal zoo config or None for SB3, overrides)
ARMS = {
    'ppo': ('tidal PPO, defaults', 'acrobot_ppo', []),
    'ppo_sampled_eval': ('tidal PPO, defaults, eval samples the policy', 'acrobot_ppo',
                         ['policy.eval.deterministic=false']),
    'ppo_reward_scaled': ('tidal PPO, rewards scaled', 'acrobot_ppo', ['policy.normalize.reward=true']),
    # SB3's n_steps=2048 counts steps per env; tidal's n_sample counts them over all envs
    'ppo_sb3_rollout': ("tidal PPO, SB3's rollout (2048 steps per env)", 'acrobot_ppo',
                        [f'policy.collect.n_sample={2048 * 8}']),
    'ppg': ('tidal PPG, defaults', 'acrobot_ppg', []),
    'sb3': ('SB3 PPO, defaults, 8 envs', None, []),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 100_000, threads=True, pin=True)
    parser.add_argument('--no-sb3', action='store_true', help="leave SB3's arm out")
    parser.add_argument('--arms', nargs='+', choices=list(ARMS), default=list(ARMS),
                        help='the arms to train (the report reads every arm whose runs exist)')
    args = benchmark_args(parser, argv, 'acrobot')
    args.trained = [arm for arm in args.arms if not (arm == 'sb3' and args.no_sb3)]
    # the report's arms: those this call trains, and those an earlier call trained
    args.arms = [arm for arm in ARMS if (arm in args.trained and not args.report_only)
                 or (args.out / 'runs' / f'{arm}_seed{args.seeds[0]}').is_dir()]
    return args


def job(args: argparse.Namespace, arm: str, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'{arm}_seed{seed}'
    _, config, overrides = ARMS[arm]
    if config is None:
        cmd = [str(ensure_sb3_venv()), display_path(SB3_RUNNER), '--env-id', 'Acrobot-v1', '--seed', str(seed),
               '--steps', str(args.steps), '--n-envs', str(SB3_ENVS), '--eval-every', '8192', '--eval-episodes', '10',
               '--threads', str(args.threads), '--run-dir', display_path(run_dir)]
        return Job(f'{arm} seed {seed}', cmd, run_dir)
    return Job(f'{arm} seed {seed}', tidal_train_command(config, seed, args.steps, run_dir,
                                                         [*FULL_BUDGET, *overrides]), run_dir)


def collect_returns(run_dir: Path) -> list[dict]:
    """(env_step, collect_return_mean) rows of a tidal run's evals.csv where training episodes finished."""
    path = run_dir / 'evals.csv'
    with open(path, newline='') as f:
        rows = [row for row in csv.DictReader(f) if row.get('collect_return_mean') not in (None, '')]
    found = [{'env_step': int(float(row['env_step'])), 'return_mean': float(row['collect_return_mean'])}
             for row in rows]
    return [row for row in found if math.isfinite(row['return_mean'])]


def build_report(args: argparse.Namespace) -> str:
    marks = milestones(args.steps)
    runs = {arm: [read_run(job(args, arm, seed).run_dir) for seed in args.seeds] for arm in args.arms}
    labels = {arm: ARMS[arm][0] for arm in args.arms}
    rows = {labels[arm]: library_row(runs[arm], marks) for arm in args.arms}
    plot_curves({labels[arm]: runs[arm] for arm in args.arms}, args.out / 'curves.png',
                f'Acrobot-v1, eval return, {len(args.seeds)} seeds: median, min-max band',
                references={f'{THRESHOLD}': THRESHOLD})
    tidal_arms = [arm for arm in args.arms if ARMS[arm][1] is not None and arm != 'ppo_sampled_eval']
    # the training episodes' returns, with each run's summary (wall clock, rates) for the table
    collected = {arm: [{'evals': collect_returns(job(args, arm, seed).run_dir), 'summary': run['summary']}
                       for seed, run in zip(args.seeds, runs[arm])] for arm in tidal_arms}
    plot_curves({labels[arm]: collected[arm] for arm in tidal_arms}, args.out / 'curves_collect.png',
                'Acrobot-v1, return of the training episodes (the sampling policy): median, min-max band',
                references={f'{THRESHOLD}': THRESHOLD})
    collect_rows = {labels[arm]: library_row(collected[arm], marks) for arm in tidal_arms}
    head = ['arm', 'mean eval return over the run', 'IQM', 'final eval return', 'IQM',
            f'env steps to {THRESHOLD}', 'wall clock (s)']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    summary: dict = {}
    for arm in args.arms:
        means = [curve_mean(run['evals'], args.steps) for run in runs[arm]]
        finals = [run['evals'][-1]['return_mean'] for run in runs[arm]]
        reached = steps_to_summary(runs[arm], THRESHOLD)
        walls = [run['summary']['wall_time'] for run in runs[arm]]
        lines.append('| ' + ' | '.join([
            labels[arm], f'{statistics.median(means):.1f} (' + ', '.join(f'{m:.1f}' for m in means) + ')',
            iqm_of(means), f'{statistics.median(finals):.1f}', iqm_of(finals), steps_cell(reached),
            f'{statistics.median(walls):.0f}']) + ' |')
        summary[arm] = {'label': labels[arm], 'mean_eval_return': means, 'final_returns': finals,
                        'steps_to_threshold': reached, 'wall_time': walls,
                        'commands': [shown_command(job(args, arm, seed).cmd, args.threads) for seed in args.seeds],
                        'runs': dict(zip(args.seeds, runs[arm]))}
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}
    (args.out / 'results.json').write_text(json.dumps({'benchmark': 'acrobot', 'steps': args.steps,
                                                       'seeds': args.seeds, 'versions': vers, 'arms': summary,
                                                       'collect_table': collect_rows, 'table': rows}, indent=1) + '\n')
    text = '\n'.join([
        f'# PPO and PPG with their defaults on Acrobot-v1, {args.steps} env steps, 8 envs', '',
        f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, {PARALLEL_RUNS} runs at a time.', '',
        '## Eval return (greedy unless the arm says otherwise)', '',
        markdown_table(rows, marks, first_column='arm'), '', '\n'.join(lines), '', '![eval curves](curves.png)', '',
        '## Return of the training episodes (the sampling policy), logged beside each evaluation', '',
        markdown_table(collect_rows, marks, first_column='arm'), '', '![collect curves](curves_collect.png)', '',
        f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.", '',
        'Commands (first seed), from the repo root:', '', '```',
        *[summary[arm]['commands'][0] for arm in args.arms], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for arm in args.trained:
            if ARMS[arm][1] is not None:
                check_tidal_config(ARMS[arm][1], [*FULL_BUDGET, *ARMS[arm][2]])
        jobs = [job(args, arm, seed) for seed in args.seeds for arm in args.trained]
        run_lanes([jobs[0::PARALLEL_RUNS], jobs[1::PARALLEL_RUNS]], args.threads, pin=not args.no_pin)
    print('\n' + build_report(args))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, curves_collect.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
