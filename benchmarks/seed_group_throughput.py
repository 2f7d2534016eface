"""End-to-end throughput of a seed group by its size, on one device: env steps/s of all seeds together.

For each config and group size, `tidal train CONFIG --seeds N --device DEVICE` trains past a short random
warm-up; the rate is measured between the first evaluation (right after the warm-up) and the last (at the
budget), each seed evaluating one episode at both ends so that their cost cancels. Reported: env steps/s of all
seeds and the gain over one seed. Meant for the GPU (`--device cuda`), where one seed's small update is mostly
launch overhead that a group shares; it runs on the CPU as well.

    python benchmarks/seed_group_throughput.py --device cuda [--configs pendulum_sac hopper_sac] [--seeds 1 8 32]
        [--steps 2000] [--warmup 1000] [--out DIR] [--runs DIR]
"""
import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, TIDAL_CMD, device_name

OUT = BENCH_DIR / 'results' / 'seed_group_throughput'


def overrides(warmup: int) -> list[str]:
    """The stop value off, one evaluation after the warm-up and one at the end, of one episode each."""
    return ['env.stop_value=1000000000', 'policy.eval.evaluator.eval_freq=1000000000',
            'policy.eval.evaluator.eval_freq_env_steps=0', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
            f'policy.random_collect_size={warmup}']


def measure(config: str, seeds: int, device: str, steps: int, warmup: int, runs: Path) -> dict:
    group_dir = runs / f'{config}_{seeds}'
    cmd = [*TIDAL_CMD, 'train', config, '--seeds', str(seeds), '--device', device, '--max-env-step',
           str(warmup + steps), '--exp-name', str(group_dir), '--no-progress']
    for item in overrides(warmup):
        cmd += ['--set', item]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    spans = []
    for seed in range(seeds):
        with open(group_dir / f'seed_{seed}' / 'evals.csv') as file:
            rows = list(csv.DictReader(file))
        first, last = rows[0], rows[-1]
        spans.append((int(last['env_step']) - int(first['env_step']),
                      float(last['wall_time']) - float(first['wall_time'])))
    env_steps = sum(span[0] for span in spans)
    seconds = max(span[1] for span in spans)
    return {'config': config, 'seeds': seeds, 'device': device, 'env_steps': env_steps, 'seconds': seconds,
            'env_steps_per_s': env_steps / seconds, 'process_wall_s': wall}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--configs', nargs='+', default=['pendulum_sac', 'hopper_sac'])
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 8, 32])
    parser.add_argument('--steps', type=int, default=2000, help='env steps per seed after the warm-up')
    parser.add_argument('--warmup', type=int, default=1000, help='random env steps per seed first')
    parser.add_argument('--out', type=Path, default=OUT)
    parser.add_argument('--runs', type=Path, help='where the runs go (default: OUT/runs)')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [measure(config, seeds, args.device, args.steps, args.warmup, args.runs or args.out / 'runs')
            for config in args.configs for seeds in args.seeds]
    name = device_name(args.device, "one torch thread per run (the configs' torch_threads)")
    lines = [f'Device: {name}.', '', '| config | seeds | env steps/s (all seeds) | gain over one seed |',
             '|---|---|---|---|']
    for row in rows:
        one = next(other for other in rows if other['config'] == row['config'] and other['seeds'] == min(args.seeds))
        row['gain'] = row['env_steps_per_s'] / one['env_steps_per_s']
        lines.append(f"| {row['config']} | {row['seeds']} | {row['env_steps_per_s']:.0f} | {row['gain']:.1f}x |")
    (args.out / 'results.json').write_text(json.dumps({'device': name, 'rows': rows}, indent=2) + '\n')
    (args.out / 'table.md').write_text('\n'.join(lines) + '\n')
    print('\n'.join(lines))


if __name__ == '__main__':
    sys.exit(main())
