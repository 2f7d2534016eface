"""The device check on one GPU, in parts that each fit one call: the speed table, the `gpu` tests, the seed-group
rows, and the learning check.

- `speed`: env steps/s of SAC on HalfCheetah-v5 eager, compiled and compiled with CUDA graphs, SB3's SAC on the
  same GPU, and PPO on HalfCheetah-v5 the three ways (`compile_speed.py`).
- `tests`: `pytest -m gpu`, every test that needs CUDA (each policy trained on the GPU, its first update equal to
  the CPU's, no device sync in an update, compiled updates equal to eager ones, checkpoints moved CPU <-> GPU, a
  seed group on the GPU, GAE on CUDA, a GPU learner with CPU workers).
- `seed_group`: a seed group's throughput by its size (`seed_group_throughput.py`).
- `kernels`: one update of SAC, TD3, DQN and CrossQ against the GPU's floor for its products, with the kernels it
  launches (`update_floor.py --device cuda`).
- `learning`: 3 seeds each of eager and compiled + CUDA-graph SAC on HalfCheetah-v5, 30k env steps, side by
  side (`compile_learning.py`); a call of its own.

Each part writes its results under `--out` as soon as it ends, so a call cut short keeps what it measured; a part
is skipped when less than its expected time is left of `--budget-s`. `--quick` shrinks every budget to check the
script on a CPU. On a machine with PyTorch but without tidal's other packages, carry the wheels that
`benchmarks/gpu_wheels.sh` downloads.

    python benchmarks/gpu_check.py [--parts speed tests] [--budget-s 560] [--out DIR] [--quick]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# the seconds each part is expected to take on an H100 (the first compile of each arm dominates `speed`)
EXPECTED_S = {'speed': 420, 'tests': 300, 'seed_group': 240, 'kernels': 90, 'learning': 540}


def gpu_test_modules() -> list[str]:
    """The test modules that hold `gpu` tests: collecting only these keeps a device image without the test extras
    (Ray, Minari, import-linter, ...) from failing the collection of modules that need none of CUDA."""
    return sorted(str(path.relative_to(ROOT)) for path in (ROOT / 'tests').rglob('test_*.py')
                  if 'mark.gpu' in path.read_text(encoding='utf-8'))


def run_tests(out: Path, quick: bool, limit_s: float, workers: int) -> str:
    """`pytest -m gpu` over the modules that hold such tests, in `workers` processes sharing the GPU where
    pytest-xdist is there: its last line, the full output in gpu_tests.log."""
    select = ['-k', 'sac and not sac_v and not sqil and not discrete'] if quick else []
    spread = ['-n', str(workers)] if workers > 1 and importlib.util.find_spec('xdist') else []
    try:
        result = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-m', 'gpu', '-rfEs', '-p', 'no:cacheprovider',
                                 '--durations=10', *spread, *select, *gpu_test_modules()],
                                cwd=ROOT, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired as stopped:
        output = (stopped.stdout or b'').decode() if isinstance(stopped.stdout, bytes) else (stopped.stdout or '')
        (out / 'gpu_tests.log').write_text(output)
        return f'stopped after {limit_s:.0f} s (see gpu_tests.log)'
    (out / 'gpu_tests.log').write_text(result.stdout + result.stderr)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else f'pytest exited {result.returncode} with no output'


def with_repo_path() -> dict[str, str]:
    """The environment with the repository first on PYTHONPATH: a part runs from benchmarks/, where a relative
    PYTHONPATH entry (an uninstalled checkout's `.`) no longer finds tidal."""
    paths = [str(ROOT), *(entry for entry in os.environ.get('PYTHONPATH', '').split(os.pathsep) if entry)]
    return {**os.environ, 'PYTHONPATH': os.pathsep.join(paths)}


def part_command(part: str, device: str, out: Path, runs: Path, quick: bool) -> list[str]:
    if part == 'speed':
        cmd = ['compile_speed.py', '--device', device, '--out', str(out / 'compile_speed'), '--runs', str(runs)]
        if quick:
            cmd += ['--sac-config', 'pendulum_sac', '--ppo-config', 'cartpole_ppo', '--window', '200',
                    '--modes', 'none', 'default', '--acting-cpu-modes', 'none', '--arms', 'sac', 'ppo']
        return cmd
    if part == 'seed_group':
        cmd = ['seed_group_throughput.py', '--device', device, '--out', str(out / 'seed_group'), '--runs', str(runs)]
        if quick:
            cmd += ['--configs', 'pendulum_sac', '--seeds', '1', '2', '--steps', '50', '--warmup', '100']
        return cmd
    if part == 'kernels':
        cmd = ['update_floor.py', '--device', device, '--out', str(out / 'update_floor')]
        return cmd + (['--policies', 'sac', '--updates', '20'] if quick else
                      ['--policies', 'sac', 'td3', 'dqn', 'crossq', '--updates', '200'])
    cmd = ['compile_learning.py', '--device', device, '--out', str(out / 'compile_learning'), '--runs', str(runs)]
    if quick:
        cmd += ['--config', 'pendulum_sac', '--steps', '1300', '--seeds', '0', '--modes', 'none', 'default']
    return cmd


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--parts', nargs='+', default=['speed', 'tests'], choices=list(EXPECTED_S))
    parser.add_argument('--budget-s', type=float, default=560, help='seconds this call may take')
    parser.add_argument('--out', type=Path, default=BENCH / 'results' / 'gpu_check')
    parser.add_argument('--test-workers', type=int, default=8,
                        help='pytest-xdist processes for the gpu tests (they share the one GPU)')
    parser.add_argument('--tests-limit-s', type=float, help='seconds the gpu tests may take at most')
    parser.add_argument('--quick', action='store_true', help='tiny budgets, to check the script on a CPU')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    name = torch.cuda.get_device_name(0) if device == 'cuda' else 'CPU'
    start = time.perf_counter()
    print(f'device: {name}, torch {torch.__version__}', flush=True)
    runs = Path(tempfile.mkdtemp(prefix='gpu_check_runs_'))  # kept out of --out, which holds only the results
    for part in args.parts:
        left = args.budget_s - (time.perf_counter() - start)
        if not args.quick and left < EXPECTED_S[part]:
            print(f'{part}: skipped, {left:.0f} s left of the budget and it takes about {EXPECTED_S[part]} s',
                  flush=True)
            continue
        began = time.perf_counter()
        if part == 'tests':
            limit = min(left - 10, args.tests_limit_s) if args.tests_limit_s else left - 10
            print(f'gpu tests: {run_tests(args.out, args.quick, max(limit, 60), args.test_workers)}', flush=True)
        else:
            script, *rest = part_command(part, device, args.out, runs / part, args.quick)
            result = subprocess.run([sys.executable, str(BENCH / script), *rest], cwd=BENCH, env=with_repo_path())
            if result.returncode:
                print(f'{part}: {script} exited {result.returncode}', flush=True)
        print(f'{part}: {time.perf_counter() - began:.0f} s', flush=True)
    print(f'gpu check: {time.perf_counter() - start:.0f} s', flush=True)


if __name__ == '__main__':
    sys.exit(main())
