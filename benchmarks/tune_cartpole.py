"""`tidal tune` on CartPole-v1 PPO, then the best config against the zoo's on seeds the study never saw.

1. The study: `tidal tune cartpole_ppo --trials 20 --seeds 2 --budget-env-steps 6144`, every config
   evaluated every 1024 env steps. A trial's value is the mean over its seeds of the mean of their last
   three evaluations (a run that reaches the stop value, 500, scores 500), so within 6144 env steps only a
   config that learns faster than the zoo's (which reaches 475 at a median 7.2k) can score near 500.
2. The check: `best.yaml` and the zoo's `cartpole_ppo` on fresh seeds (100 and up, the study used 0 and 1),
   side by side, one per core, each to its stop value or `--check-steps`: env steps to 475 per seed.
   Picking the best of 20 trials on 2 seeds favours lucky configs; fresh seeds say whether it holds.

Outputs in `benchmarks/results/tune_cartpole/`: the study's `trials.csv`, `best.yaml`, `importance.png`,
and `results.json`, `curves.png`, `table.md`.

    python benchmarks/tune_cartpole.py [--trials 20] [--seeds 2] [--budget 6144] [--check-seeds 5] [--report-only]
"""
import argparse
import csv
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import (BENCH_DIR, REPO_ROOT, TIDAL_CMD, Job, display_path, read_run, run_batch, shown_command,
                    thread_env, tidal_train_command)
from report import iqm_of, library_row, markdown_table, milestones, plot_curves, steps_cell, steps_to_summary

CONFIG = 'cartpole_ppo'
SOLVED = 475.0
EVAL_EVERY = 1024  # env steps, for every trial and every check run alike
EVAL_OVERRIDES = ['policy.eval.evaluator.eval_freq=1000000', f'policy.eval.evaluator.eval_freq_env_steps={EVAL_EVERY}']
STUDY_FILES = ('trials.csv', 'best.yaml', 'importance.png')
FIRST_CHECK_SEED = 100


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trials', type=int, default=20)
    parser.add_argument('--seeds', type=int, default=2, help='seeds per trial')
    parser.add_argument('--budget', type=int, default=6144, help='env steps per seed of a trial')
    parser.add_argument('--check-seeds', type=int, default=5, help='fresh seeds the best config and the zoo run on')
    parser.add_argument('--check-steps', type=int, default=20_000, help='env-step budget of a check run')
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'tune_cartpole')
    parser.add_argument('--skip-study', action='store_true', help='reuse the study in --out')
    parser.add_argument('--report-only', action='store_true', help='rebuild the outputs from the run folders')
    return parser.parse_args(argv)


def study_command(args: argparse.Namespace) -> list[str]:
    cmd = [*TIDAL_CMD, 'tune', CONFIG, '--trials', str(args.trials), '--seeds', str(args.seeds),
           '--budget-env-steps', str(args.budget), '--study-dir', display_path(args.out / 'runs' / 'study')]
    for item in EVAL_OVERRIDES:
        cmd += ['--set', item]
    return cmd


def run_study(args: argparse.Namespace) -> float:
    """Runs (or continues) the study in one process on one core; returns its wall clock in seconds."""
    cmd = study_command(args)
    print(f'\n== the study\n$ {shown_command(cmd, 1)}', flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO_ROOT, env={**os.environ, **thread_env(1)}, check=True)
    return time.perf_counter() - start


def check_jobs(args: argparse.Namespace) -> dict[str, list[Job]]:
    best = display_path(args.out / 'best.yaml')
    seeds = range(FIRST_CHECK_SEED, FIRST_CHECK_SEED + args.check_seeds)
    runs = args.out / 'runs'
    return {side: [Job(f'{side} seed {seed}', tidal_train_command(config, seed, args.check_steps,
                                                                  runs / f'{side}_seed{seed}', EVAL_OVERRIDES),
                       runs / f'{side}_seed{seed}') for seed in seeds]
            for side, config in (('tuned', best), ('zoo', CONFIG))}


def zoo_value(key: str) -> str:
    """The zoo config's value at a dotted key, as the study's table writes values."""
    from tidal.config import compile_config, resolve_config_source
    from tidal.config.tree import value_at

    node = value_at(compile_config(*resolve_config_source(CONFIG), infer_shapes=False), key)
    return str(list(node) if isinstance(node, (list, tuple)) else node)


def build_report(args: argparse.Namespace, study_wall: float | None) -> str:
    jobs = check_jobs(args)
    runs = {side: [read_run(job.run_dir) for job in side_jobs] for side, side_jobs in jobs.items()}
    marks = milestones(args.check_steps)
    labels = {'tuned': 'best.yaml of the study', 'zoo': 'zoo cartpole_ppo'}
    rows = {labels[side]: library_row(runs[side], marks) for side in runs}
    solved = {side: steps_to_summary(runs[side], SOLVED) for side in runs}
    with open(args.out / 'trials.csv', newline='') as handle:
        trials = list(csv.DictReader(handle))
    best = max((row for row in trials if row['state'] == 'COMPLETE'), key=lambda row: float(row['value']))
    sampled = [key for key in best if key.startswith(('policy.', 'env.'))]
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium', 'optuna')}
    plot_curves({labels[side]: runs[side] for side in runs}, args.out / 'curves.png',
                f'CartPole-v1 PPO, {args.check_seeds} fresh seeds: median, min-max band',
                references={'475': SOLVED})

    def steps_line(side: str) -> str:
        per_seed = solved[side]['per_seed']
        shown = ', '.join('-' if s is None else f'{s / 1000:g}k' for s in per_seed)
        iqm = f', IQM {iqm_of([float(s) for s in per_seed], 0)}' if None not in per_seed else ''
        return f'| {labels[side]} | {steps_cell(solved[side])}{iqm} | {shown} |'

    results = {'benchmark': 'tune_cartpole', 'config': CONFIG, 'trials': args.trials, 'seeds_per_trial': args.seeds,
               'budget_env_steps': args.budget, 'study_wall_s': study_wall, 'check_seeds': args.check_seeds,
               'check_steps': args.check_steps, 'versions': vers, 'table': rows, 'steps_to_475': solved,
               'study_command': shown_command(study_command(args), 1),
               'runs': {side: [r for r in runs[side]] for side in runs}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    wall = f' in {study_wall / 60:.0f} minutes' if study_wall else ''
    text = '\n'.join([
        '# tidal tune on CartPole-v1 PPO', '',
        f'The study: {args.trials} trials of {args.seeds} seeds, {args.budget} env steps each{wall}, one process:',
        '', '```', shown_command(study_command(args), 1), '```', '',
        f'Its table ([trials.csv](trials.csv), {len(trials)} trials: '
        + ', '.join(f'{sum(r["state"] == state for r in trials)} {state.lower()}'
                    for state in sorted({r['state'] for r in trials}))
        + f') and [best.yaml](best.yaml), the config of trial {best["number"]} (value {float(best["value"]):.1f}); '
        'parameter importances in [importance.png](importance.png).', '',
        '| key | best trial | zoo cartpole_ppo |', '|---|---|---|',
        *[f'| `{key}` | {best[key]} | {zoo_value(key)} |' for key in sampled], '',
        f'The check: best.yaml and the zoo config on {args.check_seeds} fresh seeds '
        f'({FIRST_CHECK_SEED}-{FIRST_CHECK_SEED + args.check_seeds - 1}), side by side, each to 500 or '
        f'{args.check_steps} env steps, evaluated every {EVAL_EVERY} env steps.', '',
        '| config | env steps to 475: median (seeds there) | per seed |', '|---|---|---|',
        steps_line('tuned'), steps_line('zoo'), '',
        markdown_table(rows, marks, first_column='config'), '',
        '![curves](curves.png)', '',
        f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}, "
        f"optuna {vers['optuna']}.", ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    study_wall = None
    if not (args.report_only or args.skip_study):
        study_wall = run_study(args)
        (args.out / 'study_wall_s.txt').write_text(f'{study_wall:.0f}\n')
    elif (args.out / 'study_wall_s.txt').exists():
        study_wall = float((args.out / 'study_wall_s.txt').read_text())
    if not args.report_only:
        for name in STUDY_FILES:
            found = args.out / 'runs' / 'study' / name
            if found.exists():
                shutil.copyfile(found, args.out / name)
        jobs = check_jobs(args)
        for tuned, zoo in zip(jobs['tuned'], jobs['zoo']):
            run_batch(f'{tuned.name} beside {zoo.name}', [tuned, zoo], 1)
    print('\n' + build_report(args, study_wall))
    print(f'outputs in {display_path(args.out)}: trials.csv, best.yaml, importance.png, results.json, curves.png, '
          'table.md')


if __name__ == '__main__':
    sys.exit(main())
