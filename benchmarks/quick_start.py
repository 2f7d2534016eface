"""The quick start's training command as a new user runs it: how long it takes and where it ends.

Runs `tidal train cartpole_ppo --max-env-step 50000` (the README's command; `-s` added for the seeds beyond the
default 0) one seed at a time, alone on the machine, with torch's default threads, and times each process from its
start to its exit (imports included). Reports the wall clock, the peak resident memory, the env step the run ended
at and why (stop value 500 reached, or the budget), from each run's summary.json.

    python benchmarks/quick_start.py [--seeds 0 1 2] [--report-only]
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, display_path

CONFIG, BUDGET = 'cartpole_ppo', 50_000
OUT = BENCH_DIR / 'results' / 'quick_start'


def command(seed: int, run_dir: Path) -> list[str]:
    return ['tidal', 'train', CONFIG, '--max-env-step', str(BUDGET), '-s', str(seed), '--exp-name', str(run_dir),
            '--no-progress']


def timed_run(seed: int) -> dict:
    run_dir = OUT / 'runs' / f'seed{seed}'
    shutil.rmtree(run_dir, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(command(seed, run_dir), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    summary = json.loads((run_dir / 'summary.json').read_text())
    return {'seed': seed, 'wall_s': round(wall, 2), 'env_step': summary['env_step'], 'outcome': summary['outcome'],
            'best_return': summary['best_return']}


def table(rows: list[dict], peak_rss_mb: int) -> str:
    lines = ['| seed | wall clock (s) | env steps | how it ended | best eval return |', '|---|---|---|---|---|']
    lines += [f"| {r['seed']} | {r['wall_s']} | {r['env_step']} | {r['outcome']} | {r['best_return']:.1f} |"
              for r in rows]
    walls = [r['wall_s'] for r in rows]
    lines.append(f"\nMedian wall clock {statistics.median(walls):.1f} s over {len(rows)} seeds (range "
                 f"{min(walls):.1f}-{max(walls):.1f} s); peak resident memory "
                 f"{peak_rss_mb} MB (the largest of the runs).")
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--report-only', action='store_true')
    args = parser.parse_args(argv)
    results_file = OUT / 'results.json'
    if not args.report_only:
        rows = [timed_run(seed) for seed in args.seeds]
        peak = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        OUT.mkdir(parents=True, exist_ok=True)
        results_file.write_text(json.dumps({'benchmark': 'quick_start', 'command': ' '.join(command(0, OUT)[:5]),
                                            'peak_rss_mb': peak, 'runs': rows}, indent=2) + '\n')
    results = json.loads(results_file.read_text())
    print(table(results['runs'], results['peak_rss_mb']))
    print(f'\nresults: {display_path(results_file)}', file=sys.stderr)


if __name__ == '__main__':
    main()
