"""Side-by-side benchmark of tidal SAC against Stable-Baselines3 SAC on Pendulum-v1.

For each seed, tidal (its `tidal train` CLI) and SB3 (`sb3_sac_runner.py`, in its own venv) start
together, one per core, with the same hyperparameters; seeds run one after another. Both write the
same run folder, from which this script makes `results.json`, `curves.png` and `table.md`.

    python benchmarks/sac_pendulum.py [--seeds 0 1 2] [--steps 20000] [--threads 1] [--quick]
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from pathlib import Path

from common import (BENCH_DIR, SB3_VENV, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv,
                    merge_overrides, read_run, run_batch, shown_command, tidal_train_command, venv_python)
from report import library_row, markdown_table, milestones, plot_curves

TIDAL_CONFIG = 'pendulum_sac'
EVAL_EVERY = 1000  # tidal: train iterations; SB3: env steps (see the table notes)
EVAL_EPISODES = 5
# SB3's SAC defaults as tidal config keys; sb3_sac_runner.py sets the same values on its side.
TIDAL_OVERRIDES = [
    'policy.random_collect_size=100',
    'policy.learn.batch_size=256',
    'policy.learn.learning_rate_q=3e-4',
    'policy.learn.learning_rate_policy=3e-4',
    'policy.learn.learning_rate_alpha=3e-4',
    'policy.learn.update_per_collect=1',
    'policy.collect.n_sample=1',
    'policy.model.actor_hidden_sizes=[256,256]',
    'policy.model.critic_hidden_sizes=[256,256]',
    f'policy.eval.evaluator.eval_freq={EVAL_EVERY}',
    f'env.n_evaluator_episode={EVAL_EPISODES}',
    'env.collector_env_num=1',
    'env.evaluator_env_num=5',  # tidal steps the 5 evaluation episodes as one batch
    'env.stop_value=null',  # run the whole budget: the zoo config stops at -200
]
LIBRARIES = {'tidal': 'tidal', 'sb3': 'Stable-Baselines3'}
QUICK_STEPS = 2000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return benchmark_args(benchmark_parser(__doc__, 20_000, QUICK_STEPS, threads=True, sets=True, pin=True), argv,
                          'sac_pendulum')


def seed_jobs(args: argparse.Namespace, seed: int, sb3_python: Path) -> dict[str, Job]:
    """The tidal and SB3 runs of one seed, keyed by library."""
    runs = args.out / 'runs'
    tidal_dir, sb3_dir = runs / f'tidal_seed{seed}', runs / f'sb3_seed{seed}'
    overrides = merge_overrides(TIDAL_OVERRIDES, args.extra_sets)
    sb3_cmd = [str(sb3_python), display_path(BENCH_DIR / 'sb3_sac_runner.py'), '--seed', str(seed),
               '--steps', str(args.steps), '--run-dir', display_path(sb3_dir), '--eval-every', str(EVAL_EVERY),
               '--eval-episodes', str(EVAL_EPISODES), '--threads', str(args.threads)]
    return {'tidal': Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, tidal_dir,
                                                                   overrides), tidal_dir),
            'sb3': Job(f'SB3 seed {seed}', sb3_cmd, sb3_dir)}


def versions(sb3_runs: list[Path]) -> dict:
    """Package versions on each side: tidal's from this interpreter, SB3's from its runner's record."""
    tidal_side = {}
    for name in ('tidal', 'torch', 'gymnasium', 'numpy'):
        try:
            tidal_side[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            tidal_side[name] = None
    info = next((run / 'run_info.json' for run in sb3_runs if (run / 'run_info.json').exists()), None)
    sb3_side = json.loads(info.read_text())['versions'] if info else {}
    return {'tidal': tidal_side, 'sb3': sb3_side}


def build_report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    """Reads every run folder, writes results.json, curves.png and table.md; returns the table text."""
    runs = {lib: [read_run(jobs[seed][lib].run_dir) for seed in args.seeds] for lib in LIBRARIES}
    marks = milestones(args.steps)
    rows = {LIBRARIES[lib]: library_row(runs[lib], marks) for lib in LIBRARIES}
    ratios = {seed: t['summary']['wall_time'] / s['summary']['wall_time']
              for seed, t, s in zip(args.seeds, runs['tidal'], runs['sb3'])}
    ratio = statistics.median(ratios.values())
    commands = {lib: {seed: shown_command(jobs[seed][lib].cmd, args.threads) for seed in args.seeds}
                for lib in LIBRARIES}
    vers = versions([jobs[seed]['sb3'].run_dir for seed in args.seeds])

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({LIBRARIES[lib]: runs[lib] for lib in LIBRARIES}, args.out / 'curves.png',
                f'SAC on Pendulum-v1, {len(args.seeds)} seed(s): median, min-max band')
    results = {'benchmark': 'sac_pendulum', 'env_id': 'Pendulum-v1', 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'versions': vers, 'commands': commands,
               'table': rows, 'wall_clock_ratio_tidal_over_sb3': {'median': ratio, 'per_seed': ratios},
               'runs': {lib: {seed: run for seed, run in zip(args.seeds, runs[lib])} for lib in LIBRARIES}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    per_seed = ', '.join(f'seed {seed}: {r:.2f}' for seed, r in ratios.items())
    text = '\n'.join([
        '# SAC on Pendulum-v1: tidal vs Stable-Baselines3', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run; the two '
        'libraries trained at the same time, one per core. Batch 256, lr 3e-4 (critics, actor, alpha), '
        '[256, 256] networks, 100 random warm-up steps, 1 update per env step, gamma 0.99, tau 0.005, '
        f'automatic entropy; {EVAL_EPISODES} deterministic evaluation episodes.', '',
        markdown_table(rows, marks), '',
        f'tidal/SB3 wall-clock ratio (per seed pair, then median): **{ratio:.2f}** ({per_seed}).', '',
        'Notes:',
        '- Returns are medians over seeds of the last evaluation at or before each milestone. SB3 '
        f'evaluates every {EVAL_EVERY} env steps; tidal every {EVAL_EVERY} train iterations, and with '
        '100 warm-up steps and one update per step iteration k is env step k+100, so a tidal cell can '
        f'come from up to {EVAL_EVERY} env steps before its milestone (shown as "at ...").',
        '- Wall clock runs from the start of training to its end and includes evaluation; env steps/s '
        'and updates/s are totals divided by it.',
        f"- Versions: tidal {vers['tidal'].get('tidal')}, torch {vers['tidal'].get('torch')}; "
        f"stable-baselines3 {vers['sb3'].get('stable-baselines3')}, torch {vers['sb3'].get('torch')}; "
        f"gymnasium {vers['tidal'].get('gymnasium')}.",
        '', 'Repeat a tidal run from the repo root with:', '', '```',
        commands['tidal'][args.seeds[0]], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sb3_python = venv_python(SB3_VENV) if args.report_only else ensure_sb3_venv()
    jobs = {seed: seed_jobs(args, seed, sb3_python) for seed in args.seeds}
    if not args.report_only:
        for seed in args.seeds:
            run_batch(f'seed {seed}: tidal and SB3 side by side, {args.steps} env steps', list(jobs[seed].values()),
                      args.threads, pin=not args.no_pin)
    print('\n' + build_report(args, jobs))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
