"""What one env step costs a Ray worker's CPU when the env's steps take time: tidal's PPO worker beside RLlib's.

`scale.py` stands in for a slow simulator with an env that sleeps. A sleeping worker leaves the CPU free, but on
a shared or virtual machine the core it wakes on has meanwhile run other work, so its caches and TLB are cold and
the step's own work (acting, the env, the transition) costs several times what it costs back to back. This script
measures that cost with each thread's CPU clock, which a sleep does not advance, for sleeps of 0, 2, 10 and 50 ms
per step, on one env collecting 64-step fragments as a `scale.py` worker does:

- tidal: `scale.py`'s PPO (`cartpole_ppo` with its overrides) collected by `SampleCollector` in this process, the
  loop a Ray worker runs (its rollout's GAE included);
- RLlib: `scale.py`'s PPO on RLlib's local EnvRunner (`rllib_step_cost_runner.py`, its own venv);
- the floor: one torch add of a [1, 4] tensor after the same sleep, which says how much is the machine's.

The number sets how many env steps per second the machine's cores can serve, whatever the number of workers:
cores / CPU per step. Writes `step_cost.json` and `step_cost.md` beside `scale.py`'s outputs (about 5 minutes):

    python benchmarks/step_cost.py [--out benchmarks/results/scale]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import BENCH_DIR, display_path, ensure_rllib_venv
from scale import PPO_CONFIG, PPO_OVERRIDES, sleeping_env
from step_cost_timing import FRAGMENT, time_fragments

STEP_SECONDS = (0.0, 0.002, 0.01, 0.05)


def tidal_step_cost(step_seconds: float) -> tuple[float, float]:
    """(CPU us, wall us) per env step of tidal's PPO collecting on one env whose steps sleep `step_seconds`."""
    import torch
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_env_manager, build_policy
    from tidal.worker.collector import SampleCollector

    cfg = load_config(PPO_CONFIG, 0, [*PPO_OVERRIDES, 'env.collector_env_num=1', *sleeping_env('CartPole-v1',
                                                                                              step_seconds)])
    policy = build_policy(cfg, enable_field=('collect',))
    collector = SampleCollector(build_env_manager(cfg, 'collector', 1, label='step cost'), policy.collect_mode,
                                torch.device('cpu'))
    collector.reset(seed=0)
    try:
        return time_fragments(lambda: collector.collect(FRAGMENT), step_seconds)
    finally:
        collector.env.close()


def torch_op_after_sleep(step_seconds: float, repeats: int = 200) -> float:
    """CPU us of one small torch add right after sleeping `step_seconds` (median): the machine's part."""
    import torch
    x = torch.zeros(1, 4)
    times = []
    for _ in range(repeats):
        if step_seconds:
            time.sleep(step_seconds)
        start = time.thread_time()
        x + 1
        times.append((time.thread_time() - start) * 1e6)
    return statistics.median(times)


def rllib_step_costs(python: Path) -> dict[float, tuple[float, float]]:
    command = [str(python), str(BENCH_DIR / 'rllib_step_cost_runner.py'), *(f'{s:g}' for s in STEP_SECONDS)]
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1'}
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=BENCH_DIR, env=env).stdout
    return {float(key): tuple(value) for key, value in json.loads(out.strip().splitlines()[-1]).items()}


def report(results: dict, cores: int) -> str:
    lines = [
        '# CPU per env step of a worker, by the sleep per step', '',
        f'Command: `python benchmarks/step_cost.py`. One env, {FRAGMENT}-step fragments, median of 5 timings of '
        'about 2 s each; CPU is the thread clock (a sleep adds none). Ceiling: env steps/s that the machine\'s '
        f'{cores} cores can serve at that CPU per step, summed over all workers, before any learning.', '',
        '| sleep per step | tidal CPU us/step | tidal ceiling (steps/s) | RLlib CPU us/step | RLlib ceiling (steps/s) '
        '| one torch add after the sleep (us) |',
        '|---|---|---|---|---|---|',
    ]
    for row in results['rows']:
        tidal, rllib = row['tidal_cpu_us'], row['rllib_cpu_us']
        rllib_text = ('n/a', 'n/a') if rllib is None else (f'{rllib:.0f}', f'{cores * 1e6 / rllib:,.0f}')
        lines.append(f"| {row['step_seconds'] * 1e3:g} ms | {tidal:.0f} | {cores * 1e6 / tidal:,.0f} | "
                     f'{rllib_text[0]} | {rllib_text[1]} | {row["torch_add_us"]:.1f} |')
    return '\n'.join(lines) + '\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'scale')
    parser.add_argument('--no-rllib', action='store_true', help="tidal's side only")
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH_DIR.parent))
    import torch
    torch.set_num_threads(1)
    rllib = {} if args.no_rllib else rllib_step_costs(ensure_rllib_venv())
    rows = []
    for seconds in STEP_SECONDS:
        cpu, wall = tidal_step_cost(seconds)
        row = {'step_seconds': seconds, 'tidal_cpu_us': cpu, 'tidal_wall_us': wall,
               'rllib_cpu_us': rllib[seconds][0] if seconds in rllib else None,
               'rllib_wall_us': rllib[seconds][1] if seconds in rllib else None,
               'torch_add_us': torch_op_after_sleep(seconds)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    cores = os.cpu_count() or 1
    results = {'benchmark': 'step_cost', 'fragment': FRAGMENT, 'cores': cores, 'rows': rows,
               'versions': {'torch': torch.__version__}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'step_cost.json').write_text(json.dumps(results, indent=1) + '\n')
    text = report(results, cores)
    (args.out / 'step_cost.md').write_text(text)
    print('\n' + text + f'\noutputs in {display_path(args.out)}: step_cost.json, step_cost.md')


if __name__ == '__main__':
    main()
