"""Env steps/s of a training run by how its update is compiled (`policy.learn.compile`), beside SB3's SAC.

Each tidal arm is `tidal train CONFIG --device D --set policy.learn.compile=MODE` for three windows of W env steps:
the random warm-up (SAC) or the first rollout (PPO); W steps in which the compiler runs; W measured steps. An
evaluation of one episode closes the second and the third window, and the rate is W over the wall time between
those two rows (so it includes one evaluation episode). SB3's SAC, with the same sizes (batch 256, [256, 256]
networks, one update per env step, W random steps first), is timed over the same window of its own rows.
The arms run one after another, alone on the machine (`--repeats`: each arm that many times, its median
shown); `--acting-cpu-modes` adds
arms that act on a CPU copy of the collect mode (`policy.collect.acting_device=cpu`), the learner on the device.

    python benchmarks/compile_speed.py [--device cuda] [--arms sac ppo sb3] [--modes none default reduce-overhead]
        [--acting-cpu-modes reduce-overhead] [--sac-config halfcheetah_sac] [--ppo-config halfcheetah_ppo]
        [--window 2000] [--repeats 1] [--out DIR]

The SAC arms follow LeanRL's HalfCheetah task (HalfCheetah-v5 here, the version gymnasium offers); the SB3 arm
runs where `stable_baselines3` imports (the current Python, else the SB3 venv of `common.ensure_sb3_venv`).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, REPO_ROOT, TIDAL_CMD, device_name, read_evals

OUT = BENCH_DIR / 'results' / 'compile_speed'


def tidal_overrides(window: int, policy: str) -> list[str]:
    """Evaluations (one episode) every `window` env steps from the first update, none else; SAC's warm-up one
    window long."""
    found = ['env.stop_value=1000000000', 'policy.eval.evaluator.eval_freq=1000000000',
             f'policy.eval.evaluator.eval_freq_env_steps={window}', 'env.n_evaluator_episode=1',
             'env.evaluator_env_num=1']
    if policy == 'sac':
        found.append(f'policy.random_collect_size={window}')
    return found


def window_rate(run_dir: Path, window: int) -> dict:
    """Env steps/s between the rows at 2 W and 3 W env steps (the last window)."""
    rows = {row['env_step']: row for row in read_evals(run_dir)}
    first, last = rows.get(2 * window), rows.get(3 * window)
    if first is None or last is None:
        raise SystemExit(f'{run_dir}: no evaluation rows at {2 * window} and {3 * window} env steps '
                         f'(rows at {sorted(rows)})')
    seconds = last['wall_time'] - first['wall_time']
    return {'env_steps': window, 'seconds': round(seconds, 3), 'env_steps_per_s': round(window / seconds, 1),
            'updates_per_s': round((last['train_iter'] - first['train_iter']) / seconds, 1)}


def run_tidal(config: str, policy: str, mode: str, device: str, window: int, runs: Path, acting: str) -> dict:
    run_dir = runs / f'{config}_{mode}_acting_{acting}'
    cmd = [*TIDAL_CMD, 'train', config, '--device', device, '--max-env-step', str(3 * window), '--exp-name',
           str(run_dir), '--no-progress', '--set', f'policy.learn.compile={mode}',
           '--set', f'policy.collect.acting_device={acting}']
    for item in tidal_overrides(window, policy):
        cmd += ['--set', item]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL)
    arm = f'tidal {policy} ({config})' + (', acting on a CPU copy' if acting == 'cpu' else '')
    return {'arm': arm, 'compile': mode, 'process_wall_s': round(time.perf_counter() - start, 1),
            **window_rate(run_dir, window)}


def rollout_steps(config: str) -> int:
    """Env steps of one of the config's rollouts (an on-policy window is whole rollouts)."""
    from tidal.entry.setup import load_config
    return int(load_config(config).policy.collect.n_sample)


def sb3_python() -> str:
    found = subprocess.run([sys.executable, '-c', 'import stable_baselines3'], capture_output=True)
    if found.returncode == 0:
        return sys.executable
    from common import ensure_sb3_venv
    return str(ensure_sb3_venv())


def run_sb3(env_id: str, device: str, window: int, runs: Path) -> dict:
    run_dir = runs / 'sb3_sac'
    cmd = [sb3_python(), str(BENCH_DIR / 'sb3_sac_runner.py'), '--env-id', env_id, '--device', device,
           '--learning-starts', str(window), '--eval-every', str(window), '--eval-episodes', '1',
           '--steps', str(3 * window), '--run-dir', str(run_dir)]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=BENCH_DIR, check=True, stdout=subprocess.DEVNULL)
    return {'arm': f'SB3 sac ({env_id})', 'compile': '-', 'process_wall_s': round(time.perf_counter() - start, 1),
            **window_rate(run_dir, window)}


def median_row(repeats: list[dict]) -> dict:
    """The repeat of median rate, with every repeat's rate beside it."""
    ordered = sorted(repeats, key=lambda row: row['env_steps_per_s'])
    return {**ordered[(len(ordered) - 1) // 2], 'repeats': [row['env_steps_per_s'] for row in repeats]}


def table(rows: list[dict]) -> list[str]:
    lines = ['| arm | compile | env steps/s | updates/s | vs its eager | process wall s |', '|---|---|---|---|---|---|']
    for row in rows:
        base = row['arm'].split(', acting')[0]
        eager = next((other for other in rows if other['arm'] == base and other['compile'] == 'none'), None)
        gain = f"{row['env_steps_per_s'] / eager['env_steps_per_s']:.2f}x" if eager and row['compile'] != '-' else '-'
        lines.append(f"| {row['arm']} | {row['compile']} | {row['env_steps_per_s']:.0f} | {row['updates_per_s']:.0f} "
                     f"| {gain} | {row['process_wall_s']:.0f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--arms', nargs='+', default=['sac', 'sb3', 'ppo'], choices=['sac', 'ppo', 'sb3'])
    parser.add_argument('--modes', nargs='+', default=['none', 'default', 'reduce-overhead'])
    parser.add_argument('--acting-cpu-modes', nargs='*', default=['reduce-overhead'],
                        help='modes also measured acting on a CPU copy (policy.collect.acting_device=cpu)')
    parser.add_argument('--sac-config', default='halfcheetah_sac')
    parser.add_argument('--ppo-config', default='halfcheetah_ppo')
    parser.add_argument('--sb3-env', default='HalfCheetah-v5')
    parser.add_argument('--window', type=int, default=2000, help='SAC env steps per window (PPO: whole rollouts)')
    parser.add_argument('--ppo-rollouts', type=int, default=1, help='PPO rollouts per window')
    parser.add_argument('--repeats', type=int, default=1, help='runs of each arm; the table shows the median')
    parser.add_argument('--out', type=Path, default=OUT)
    parser.add_argument('--runs', type=Path, help='where the runs go (default: OUT/runs)')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = args.runs or args.out / 'runs'
    name = device_name(args.device, 'one torch thread')
    rows: list[dict] = []

    def record(row: dict) -> None:  # written after every arm: a run cut short keeps what it measured
        rows.append(row)
        print(f"  {row['arm']} compile={row['compile']}: {row['env_steps_per_s']:.0f} env steps/s", flush=True)
        (args.out / 'results.json').write_text(json.dumps({'device': name, 'window': args.window, 'rows': rows},
                                                          indent=2) + '\n')
        (args.out / 'table.md').write_text('\n'.join([f'Device: {name}.', '', *table(rows)]) + '\n')

    def measure(label: str, mode: str, one_run) -> None:
        """One arm's median over the repeats; an arm whose run fails is reported and the next arm still runs."""
        try:
            record(median_row([one_run(runs / f'repeat{repeat}') for repeat in range(args.repeats)]))
        except subprocess.CalledProcessError as failed:
            print(f'  {label} compile={mode}: FAILED, exit {failed.returncode} (its stderr is above)', flush=True)
            failures.append(f'{label} compile={mode}: exit {failed.returncode}')

    failures: list[str] = []
    for arm in args.arms:
        if arm == 'sb3':
            measure(f'SB3 sac ({args.sb3_env})', '-',
                    lambda where: run_sb3(args.sb3_env, args.device, args.window, where))
            continue
        config = args.sac_config if arm == 'sac' else args.ppo_config
        window = args.window if arm == 'sac' else rollout_steps(config) * args.ppo_rollouts
        for mode, acting in [*((mode, 'learner') for mode in args.modes),
                             *((mode, 'cpu') for mode in args.acting_cpu_modes)]:
            measure(f'tidal {arm} ({config}, acting on {acting})', mode,
                    lambda where, mode=mode, acting=acting: run_tidal(config, arm, mode, args.device, window,
                                                                      where, acting))
    print('\n'.join([f'Device: {name}.', '', *table(rows)]))
    if failures:
        raise SystemExit('arms that failed: ' + '; '.join(failures))


if __name__ == '__main__':
    sys.exit(main())
