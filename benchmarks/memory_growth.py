"""Resident memory of one long `tidal train pendulum_sac` run, read every minute: does it stay flat once the replay is full?

Starts `tidal train pendulum_sac` with a small replay buffer (so that its columns are written through within minutes),
no stop value, a budget it never reaches, one torch thread and no progress bar; reads the process's VmRSS (and its
anonymous and file-backed parts, its threads and open files) from /proc every `--interval-s` seconds for `--minutes`,
with the env step of the run's last log line; then stops the run with SIGTERM (it saves a checkpoint and exits).
Reports the RSS when the replay became full and at the end, the growth in between (MB and MB/hour) and the slope
of a least-squares line through the samples after full, over all of them and over their second half (whether the
growth flattens). Writes results.json (updated at each sample, so a cut-short run keeps its numbers) and rss.png.

    python benchmarks/memory_growth.py [--minutes 60] [--interval-s 60] [--replay-size 10000]
        [--set KEY=VALUE]... [--child-env NAME=VALUE]... [--out DIR] [--report-only]

Linux only (/proc).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, REPO_ROOT, TIDAL_CMD, display_path, shown_command, thread_env

CONFIG = 'pendulum_sac'
OUT = BENCH_DIR / 'results' / 'memory_growth'
BUDGET = 1_000_000_000  # env steps: never reached, the run is stopped by SIGTERM
STATUS_FIELDS = {'VmRSS': 'rss_mb', 'RssAnon': 'rss_anon_mb', 'RssFile': 'rss_file_mb', 'VmHWM': 'peak_rss_mb'}
ENV_STEP = re.compile(rb'@ env step (\d+)')


def train_command(run_dir: Path, replay_size: int, extra: list[str]) -> list[str]:
    overrides = [f'policy.other.replay_buffer.replay_buffer_size={replay_size}', 'env.stop_value=inf', *extra]
    cmd = [*TIDAL_CMD, 'train', CONFIG, '--max-env-step', str(BUDGET), '--no-progress',
           '--exp-name', display_path(run_dir)]
    for item in overrides:
        cmd += ['--set', item]
    return cmd


def read_status(pid: int) -> dict:
    """The memory fields of /proc/PID/status in MB, with the thread count and open file descriptors."""
    sample: dict = {}
    with open(f'/proc/{pid}/status') as status:
        for line in status:
            name, _, value = line.partition(':')
            if name in STATUS_FIELDS:
                sample[STATUS_FIELDS[name]] = round(int(value.split()[0]) / 1024, 1)  # kB -> MB
            elif name == 'Threads':
                sample['threads'] = int(value)
    sample['open_fds'] = len(os.listdir(f'/proc/{pid}/fd'))
    return sample


def last_env_step(log_file: Path) -> int | None:
    """The env step of the last train or eval line of the run's log.txt (its last 8 kB are read)."""
    try:
        with open(log_file, 'rb') as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 8192))
            steps = ENV_STEP.findall(log.read())
    except FileNotFoundError:
        return None
    return int(steps[-1]) if steps else None


def stop(proc: subprocess.Popen, grace_s: float = 180.0) -> None:
    """SIGTERM (the run checkpoints and exits), SIGKILL if it is still there after `grace_s`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(args: argparse.Namespace, out: Path) -> dict:
    run_dir = out / 'run'
    cmd = train_command(run_dir, args.replay_size, args.set)
    child_env = dict(item.split('=', 1) for item in args.child_env)
    results = {'benchmark': 'memory_growth', 'config': CONFIG, 'replay_size': args.replay_size,
               'interval_s': args.interval_s, 'minutes': args.minutes,
               'command': ' '.join(f'{k}={v}' for k, v in child_env.items()) + (' ' if child_env else '')
               + shown_command(cmd, 1), 'samples': []}
    shutil.rmtree(run_dir, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / 'results.json'
    print(f'$ {results["command"]}', flush=True)
    # SIGTERM to this script (or Ctrl-C) stops the run too: exiting runs the `finally` below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open(out / 'run.log', 'w') as log:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env={**os.environ, **thread_env(1), **child_env},
                                stdout=log, stderr=subprocess.STDOUT)
        start = time.monotonic()
        try:
            for k in range(1, round(args.minutes * 60 / args.interval_s) + 1):
                time.sleep(max(0.0, start + k * args.interval_s - time.monotonic()))
                if proc.poll() is not None:
                    raise SystemExit(f'error: the run exited with {proc.returncode}; see '
                                     f'{display_path(out / "run.log")}')
                sample = {'minute': round((time.monotonic() - start) / 60, 2),
                          'env_step': last_env_step(run_dir / 'log.txt'), **read_status(proc.pid)}
                results['samples'].append(sample)
                results_file.write_text(json.dumps(results, indent=1) + '\n')
                print(f"  [{sample['minute']:6.1f} min] env step {sample['env_step']}, RSS {sample['rss_mb']} MB",
                      flush=True)
        finally:
            stop(proc)
    return results


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minute, MB) points, in MB per hour."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    return 60 * sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx if sxx else None


def summarise(results: dict) -> dict:
    samples = results['samples']
    full = next((s for s in samples if (s['env_step'] or 0) >= results['replay_size']), None)
    end = samples[-1]
    summary = {'start': samples[0], 'full': full, 'end': end}
    if full is not None:
        after = [(s['minute'], s['rss_mb']) for s in samples if s['minute'] >= full['minute']]
        hours = (end['minute'] - full['minute']) / 60
        growth = round(end['rss_mb'] - full['rss_mb'], 1)
        summary.update(growth_mb=growth, growth_mb_per_hour=round(growth / hours, 1) if hours else None,
                       fit_mb_per_hour=slope_per_hour(after),
                       fit_second_half_mb_per_hour=slope_per_hour(after[len(after) // 2:]))
    return summary


def table(results: dict, summary: dict) -> str:
    samples = results['samples']
    rows = {id(summary['start']): 'start', id(summary['end']): 'end'}
    if summary['full'] is not None:
        rows[id(summary['full'])] = 'replay full'
    for s in samples:
        if int(s['minute'] + 0.5) % 10 == 0:
            rows.setdefault(id(s), '')
    lines = ['| minute | env step | RSS (MB) | anonymous (MB) | file-backed (MB) | threads | open files | |',
             '|---|---|---|---|---|---|---|---|']
    lines += [f"| {s['minute']:.0f} | {s['env_step']} | {s['rss_mb']:.1f} | {s['rss_anon_mb']:.1f} | "
              f"{s['rss_file_mb']:.1f} | {s['threads']} | {s['open_fds']} | {rows[id(s)]} |"
              for s in samples if id(s) in rows]
    if summary['full'] is not None:
        fit, half = summary['fit_mb_per_hour'], summary['fit_second_half_mb_per_hour']
        lines.append(f"\nAfter the replay was full (minute {summary['full']['minute']:.0f}): "
                     f"{summary['growth_mb']:+.1f} MB to the end, {summary['growth_mb_per_hour']:+.1f} MB/hour; "
                     f"least-squares slope {fit:+.1f} MB/hour (second half of those samples: {half:+.1f} MB/hour).")
    else:
        lines.append(f"\nThe replay ({results['replay_size']} transitions) never became full.")
    return '\n'.join(lines)


def plot(results: dict, summary: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    samples = results['samples']
    minutes = [s['minute'] for s in samples]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(minutes, [s['rss_mb'] for s in samples], marker='.', label='resident (VmRSS)')
    ax.plot(minutes, [s['rss_anon_mb'] for s in samples], marker='.', label='anonymous (RssAnon)')
    if summary['full'] is not None:
        ax.axvline(summary['full']['minute'], color='grey', linestyle='--',
                   label=f"replay full ({results['replay_size']} transitions)")
    ax.set_xlabel('minutes since start')
    ax.set_ylabel('MB')
    ax.set_title(f'tidal train {CONFIG}: resident memory')
    ax.grid(alpha=0.3)
    ax.legend(loc='center left')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--minutes', type=float, default=60.0, help='how long to measure')
    parser.add_argument('--interval-s', type=float, default=60.0, help='seconds between samples')
    parser.add_argument('--replay-size', type=int, default=10_000, help='replay buffer size (transitions)')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE', help='more config overrides')
    parser.add_argument('--child-env', action='append', default=[], metavar='NAME=VALUE',
                        help='environment variable for the run (e.g. MALLOC_ARENA_MAX=2)')
    parser.add_argument('--out', type=Path, default=OUT, help='results folder')
    parser.add_argument('--report-only', action='store_true', help='report the saved results.json')
    args = parser.parse_args(argv)
    if not args.report_only:
        measure(args, args.out)
    results = json.loads((args.out / 'results.json').read_text())
    summary = summarise(results)
    results['summary'] = summary
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    plot(results, summary, args.out / 'rss.png')
    print(table(results, summary))
    print(f'\nresults: {display_path(args.out / "results.json")}, plot: {display_path(args.out / "rss.png")}',
          file=sys.stderr)


if __name__ == '__main__':
    main()
