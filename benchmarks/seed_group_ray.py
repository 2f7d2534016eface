"""A seed group through Ray against the same group on this machine: wall clock and results.

A Ray cluster of two nodes of one CPU each is started on this machine (`ray.cluster_utils.Cluster`, as Ray's own
tests make one) and `tidal train CONFIG --seeds N --set seed_group.on_ray=true --set ray.address=...` trains the
seeds as two Ray tasks, one per node; then the same seeds train as a local group (`--seeds N`, one process per
core: two here). Both sides spend their whole budget (the stop value is switched off), one after the other with
nothing else running. Reported: each side's wall clock from start to exit, env steps/s over all seeds, the final
eval returns, and whether each seed's eval returns are the same on both sides.

    python benchmarks/seed_group_ray.py [--config cartpole_ppo] [--seeds 8] [--steps 20480] [--report-only]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, TIDAL_CMD, display_path, read_evals
from report import seed_summary

OUT = BENCH_DIR / 'results' / 'seed_group_ray'
OVERRIDES = ['env.stop_value=1000000']


def group_command(config: str, seeds: int, steps: int, run_dir: Path, extra: list[str]) -> list[str]:
    cmd = [*TIDAL_CMD, 'train', config, '--seeds', str(seeds), '--max-env-step', str(steps),
           '--exp-name', display_path(run_dir), '--no-progress']
    for item in [*OVERRIDES, *extra]:
        cmd += ['--set', item]
    return cmd


def timed(cmd: list[str]) -> float:
    print('$ ' + ' '.join(cmd), flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict[str, float]:
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 1, 'include_dashboard': False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        ray_side = ['seed_group.on_ray=true', f'ray.address={cluster.address}']
        walls = {'ray': timed(group_command(args.config, args.seeds, args.steps, args.out / 'runs' / 'ray',
                                            ray_side))}
    finally:
        cluster.shutdown()
    walls['local'] = timed(group_command(args.config, args.seeds, args.steps, args.out / 'runs' / 'local', []))
    (args.out / 'walls.json').write_text(json.dumps(walls, indent=2) + '\n')
    return walls


def report(args: argparse.Namespace) -> None:
    walls = json.loads((args.out / 'walls.json').read_text())
    results: dict = {'config': args.config, 'seeds': args.seeds, 'steps': args.steps, 'sides': {}}
    evals = {side: [read_evals(args.out / 'runs' / side / f'seed_{seed}') for seed in range(args.seeds)]
             for side in walls}
    for side, wall in walls.items():
        finals = [runs[-1]['return_mean'] for runs in evals[side]]
        results['sides'][side] = {'wall_s': wall, 'env_steps_per_s': args.seeds * args.steps / wall,
                                  'final_return': seed_summary(finals), 'finals': finals}
    same = [[row['return_mean'] for row in a] == [row['return_mean'] for row in b]
            for a, b in zip(evals['ray'], evals['local'])]
    results['same_eval_returns'] = same
    (args.out / 'results.json').write_text(json.dumps(results, indent=2) + '\n')
    labels = {'ray': 'Ray, 2 nodes of 1 CPU (2 tasks)', 'local': 'this machine (2 processes)'}
    lines = ['| side | wall clock | env steps/s (all seeds) | final eval return: median, IQM | seeds whose eval returns '
             'equal the other side\'s |', '|---|---|---|---|---|']
    for side, row in results['sides'].items():
        final = row['final_return']
        lines.append(f"| {labels[side]} | {row['wall_s']:.0f} s | {row['env_steps_per_s']:.0f} | "
                     f"{final['median']:.1f}, {final['iqm']:.1f} | {sum(same)} of {len(same)} |")
    (args.out / 'table.md').write_text('\n'.join(lines) + '\n')
    print('\n'.join(lines))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default='cartpole_ppo')
    parser.add_argument('--seeds', type=int, default=8)
    parser.add_argument('--steps', type=int, default=20480)
    parser.add_argument('--out', type=Path, default=OUT)
    parser.add_argument('--report-only', action='store_true')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run(args)
    report(args)


if __name__ == '__main__':
    sys.exit(main())
