"""Side-by-side benchmark of tidal SAC against Stable-Baselines3 SAC on Hopper-v5 (MuJoCo).

Both sides use SB3 zoo's Hopper settings (tidal's `hopper_sac` zoo config): [256, 256] networks, batch
256, lr 3e-4, 10k uniform random steps before learning, one update per env step, a 1M replay. For each
seed tidal and SB3 start together, one per core; seeds run one after another.

    python benchmarks/sac_hopper.py [--seeds 0 1 2] [--steps 80000] [--quick] [--report-only]
"""
import argparse
import json
import sys
from pathlib import Path

from common import (BENCH_DIR, SB3_VENV, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv,
                    merge_overrides, read_run, run_batch, shown_command, tidal_train_command, venv_python)
from published import PUBLISHED_FINAL, SB3_ZOO_SAC, SB3_ZOO_SOURCE, published_at
from report import library_row, markdown_table, milestones, plot_curves
from sac_pendulum import versions
from zoo_curve import published_table

ENV_ID = 'Hopper-v5'
TIDAL_CONFIG = 'hopper_sac'
WARMUP = 10_000
EVAL_EVERY = 5000  # tidal: train iterations; SB3: env steps (see the table notes)
EVAL_EPISODES = 5
TIDAL_OVERRIDES = [
    f'policy.random_collect_size={WARMUP}',
    f'policy.eval.evaluator.eval_freq={EVAL_EVERY}',
    f'env.n_evaluator_episode={EVAL_EPISODES}',
]
LIBRARIES = {'tidal': 'tidal', 'sb3': 'Stable-Baselines3'}
QUICK_STEPS = 12_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    args = benchmark_args(benchmark_parser(__doc__, 80_000, QUICK_STEPS, threads=True, sets=True), argv,
                          'sac_hopper')
    return args


def seed_jobs(args: argparse.Namespace, seed: int, sb3_python: Path) -> dict[str, Job]:
    """The tidal and SB3 runs of one seed, keyed by library."""
    runs = args.out / 'runs'
    tidal_dir, sb3_dir = runs / f'tidal_seed{seed}', runs / f'sb3_seed{seed}'
    overrides = merge_overrides(TIDAL_OVERRIDES, args.extra_sets)
    sb3_cmd = [str(sb3_python), display_path(BENCH_DIR / 'sb3_sac_runner.py'), '--env-id', ENV_ID,
               '--learning-starts', str(WARMUP), '--seed', str(seed), '--steps', str(args.steps),
               '--run-dir', display_path(sb3_dir), '--eval-every', str(EVAL_EVERY),
               '--eval-episodes', str(EVAL_EPISODES), '--threads', str(args.threads)]
    return {'tidal': Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, tidal_dir,
                                                                   overrides), tidal_dir),
            'sb3': Job(f'SB3 seed {seed}', sb3_cmd, sb3_dir)}


def build_report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    """Reads every run folder, writes results.json, curves.png and table.md; returns the table text."""
    runs = {lib: [read_run(jobs[seed][lib].run_dir) for seed in args.seeds] for lib in LIBRARIES}
    marks = milestones(args.steps)
    rows = {LIBRARIES[lib]: library_row(runs[lib], marks) for lib in LIBRARIES}
    ratios = {seed: t['summary']['wall_time'] / s['summary']['wall_time']
              for seed, t, s in zip(args.seeds, runs['tidal'], runs['sb3'])}
    ratio = sorted(ratios.values())[len(ratios) // 2]
    commands = {lib: {seed: shown_command(jobs[seed][lib].cmd, args.threads) for seed in args.seeds}
                for lib in LIBRARIES}
    vers = versions([jobs[seed]['sb3'].run_dir for seed in args.seeds])

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({LIBRARIES[lib]: runs[lib] for lib in LIBRARIES}, args.out / 'curves.png',
                f'SAC on {ENV_ID}, {len(args.seeds)} seed(s): median, min-max band',
                published={SB3_ZOO_SOURCE: SB3_ZOO_SAC['Hopper']})
    reference = {mark: published_at(SB3_ZOO_SAC['Hopper'], mark) for mark in marks}
    finals = '; '.join(f'{name}: {value}' for name, value in PUBLISHED_FINAL['sac']['Hopper'].items())
    results = {'benchmark': 'sac_hopper', 'env_id': ENV_ID, 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'versions': vers, 'commands': commands,
               'table': rows, 'published': reference, 'published_source': SB3_ZOO_SOURCE,
               'wall_clock_ratio_tidal_over_sb3': {'median': ratio, 'per_seed': ratios},
               'runs': {lib: {seed: run for seed, run in zip(args.seeds, runs[lib])} for lib in LIBRARIES}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    per_seed = ', '.join(f'seed {seed}: {r:.2f}' for seed, r in ratios.items())
    text = '\n'.join([
        f'# SAC on {ENV_ID}: tidal vs Stable-Baselines3', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run; the two '
        'libraries trained at the same time, one per core. SB3 zoo settings on both sides: batch 256, lr 3e-4, '
        f'[256, 256] networks, {WARMUP} uniform random steps first, 1 update per env step, gamma 0.99, '
        f'tau 0.005, automatic entropy; {EVAL_EPISODES} deterministic evaluation episodes.', '',
        markdown_table(rows, marks), '',
        *published_table(SB3_ZOO_SAC['Hopper'], f'{SB3_ZOO_SOURCE}, Hopper-v3', marks),
        f'Published at 1M env steps: {finals}.', '',
        f'tidal/SB3 wall-clock ratio (per seed pair, then median): **{ratio:.2f}** ({per_seed}).', '',
        'Notes:',
        f'- SB3 evaluates every {EVAL_EVERY} env steps; tidal every {EVAL_EVERY} train iterations, which start '
        f'after the {WARMUP} warm-up steps, so a tidal cell can come from before its milestone ("at ...").',
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
                      args.threads)
    print('\n' + build_report(args, jobs))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
