"""The off-policy speed race on Pendulum-v1: tidal SAC, Stable-Baselines3 SAC and a minimal loop.

Same settings on all three (those of `sac_pendulum.py`), 20k env steps, one torch thread each. Every
run shares the machine with one other run (both cores busy, as in `sac_pendulum.py`): per seed tidal
and SB3 run side by side, then the minimal loops run two at a time. Outputs `results.json`,
`curves.png` and `table.md` in `benchmarks/results/sac_speed/`.

    python benchmarks/sac_speed.py [--seeds 0 1 2] [--steps 20000] [--report-only]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from common import (BENCH_DIR, SB3_VENV, Job, display_path, ensure_sb3_venv, read_run, run_together, shown_command,
                    venv_python)
from report import library_row, markdown_table, milestones, plot_curves
from sac_pendulum import EVAL_EPISODES, EVAL_EVERY, seed_jobs

LIBRARIES = {'tidal': 'tidal', 'sb3': 'Stable-Baselines3', 'minimal': 'minimal PyTorch loop'}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=20_000)
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'sac_speed')
    parser.add_argument('--report-only', action='store_true')
    parser.add_argument('--skip-minimal', action='store_true',
                        help='keep the minimal-loop runs already in --out (they do not depend on tidal)')
    args = parser.parse_args(argv)
    args.threads, args.extra_sets, args.no_pin = 1, [], False
    return args


def minimal_job(args: argparse.Namespace, seed: int, flush_denormal: bool = False) -> Job:
    name = f"minimal{'_flush' if flush_denormal else ''}_seed{seed}"
    run_dir = args.out / 'runs' / name
    cmd = [sys.executable, display_path(BENCH_DIR / 'sac_minimal.py'), '--seed', str(seed), '--steps',
           str(args.steps), '--run-dir', display_path(run_dir), '--eval-every', str(EVAL_EVERY),
           '--eval-episodes', str(EVAL_EPISODES), '--threads', '1'] + (['--flush-denormal'] if flush_denormal else [])
    return Job(name.replace('_', ' '), cmd, run_dir)


def kept_runs(args: argparse.Namespace, lib: str, jobs: dict[int, Job]) -> list[dict]:
    """A library's runs: from their folders, or, for runs that `--skip-minimal` kept but whose folders
    are gone (run folders are not committed), from the previous results.json."""
    if lib == 'minimal' and not all((jobs[seed].run_dir / 'summary.json').exists() for seed in args.seeds):
        previous = json.loads((args.out / 'results.json').read_text())['runs'][lib]
        return [previous[str(seed)] for seed in args.seeds]
    return [read_run(jobs[seed].run_dir) for seed in args.seeds]


def report(args: argparse.Namespace, jobs: dict[str, dict[int, Job]]) -> str:
    runs = {lib: kept_runs(args, lib, jobs[lib]) for lib in LIBRARIES}
    marks = milestones(args.steps)
    rows = {LIBRARIES[lib]: library_row(runs[lib], marks) for lib in LIBRARIES}
    wall_ratio = {seed: t['summary']['wall_time'] / s['summary']['wall_time']
                  for seed, t, s in zip(args.seeds, runs['tidal'], runs['sb3'])}
    update_ratio = {seed: t['summary']['updates_per_s'] / m['summary']['updates_per_s']
                    for seed, t, m in zip(args.seeds, runs['tidal'], runs['minimal'])}
    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({LIBRARIES[lib]: runs[lib] for lib in LIBRARIES}, args.out / 'curves.png',
                f'SAC on Pendulum-v1, {len(args.seeds)} seed(s): median, min-max band')
    commands = {lib: {seed: shown_command(jobs[lib][seed].cmd, 1).replace(sys.executable, 'python')
                      for seed in args.seeds} for lib in LIBRARIES}
    results = {'benchmark': 'sac_speed', 'steps': args.steps, 'seeds': args.seeds, 'table': rows,
               'wall_clock_ratio_tidal_over_sb3': wall_ratio, 'updates_ratio_tidal_over_minimal': update_ratio,
               'commands': commands,
               'runs': {lib: {seed: run for seed, run in zip(args.seeds, runs[lib])} for lib in LIBRARIES}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    fmt = lambda ratios: ', '.join(f'seed {s}: {r:.2f}' for s, r in ratios.items())  # noqa: E731
    text = '\n'.join([
        '# The off-policy speed race: SAC on Pendulum-v1', '',
        f'{args.steps} env steps, seeds {args.seeds}, one torch thread per run, every run beside one other '
        'run (tidal beside SB3 per seed, then the minimal loops two at a time). Same settings as the '
        'tidal-vs-SB3 comparison.', '',
        markdown_table(rows, marks), '',
        f'- tidal/SB3 wall-clock (per seed pair, then median): **{statistics.median(wall_ratio.values()):.2f}** '
        f'({fmt(wall_ratio)}).',
        f'- tidal/minimal gradient updates per second (per seed, then median): '
        f'**{statistics.median(update_ratio.values()):.2f}** ({fmt(update_ratio)}).',
        *_flush_line(args), '',
        'Repeat with `python benchmarks/sac_speed.py`; the tidal runs are', '', '```',
        commands['tidal'][args.seeds[0]], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def _flush_line(args: argparse.Namespace) -> list[str]:
    """The minimal loop with subnormals flushed, run to fill the last pair when the seed count is odd."""
    seed = args.seeds[0]
    flushed = args.out / 'runs' / f'minimal_flush_seed{seed}'
    if not (flushed / 'summary.json').exists() or not (args.out / 'runs' / f'minimal_seed{seed}').exists():
        return []
    plain = read_run(args.out / 'runs' / f'minimal_seed{seed}')['summary']['updates_per_s']
    fast = read_run(flushed)['summary']['updates_per_s']
    return [f'- The minimal loop with subnormal floats flushed to zero (seed {seed}): {fast:.1f} updates/s '
            f'against {plain:.1f} without ({fast / plain:.2f}x).']


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sb3_python = venv_python(SB3_VENV) if args.report_only else ensure_sb3_venv()
    jobs: dict[str, dict[int, Job]] = {lib: {} for lib in LIBRARIES}
    for seed in args.seeds:
        pair = seed_jobs(args, seed, sb3_python)
        jobs['tidal'][seed], jobs['sb3'][seed] = pair['tidal'], pair['sb3']
        jobs['minimal'][seed] = minimal_job(args, seed)
    if not args.report_only:
        rounds = [[jobs['tidal'][s], jobs['sb3'][s]] for s in args.seeds]
        minimal = [] if args.skip_minimal else [jobs['minimal'][s] for s in args.seeds]
        if len(minimal) % 2 == 1:  # no run alone: the last minimal run gets a partner with subnormals flushed
            minimal.append(minimal_job(args, args.seeds[0], flush_denormal=True))
        rounds += [minimal[i:i + 2] for i in range(0, len(minimal), 2)]
        for group in rounds:
            print('\n== ' + ' and '.join(job.name for job in group), flush=True)
            for job in group:
                print(f'$ {shown_command(job.cmd, 1)}', flush=True)
            run_together(group, 1)
    print('\n' + report(args, jobs))


if __name__ == '__main__':
    sys.exit(main())
