"""The device check, in one call on one GPU: the `gpu` tests, then the seed-group throughput rows, one table.

Part one runs `pytest -m gpu` (every test that needs CUDA: a policy on the GPU, a seed group acting and updating
stacked on it, GAE on CUDA, a GPU learner with CPU workers). Part two measures a seed group end to end by its size
(`seed_group_throughput.py`: env steps/s of all seeds after the warm-up, 1, 8 and 32 seeds of `pendulum_sac` and
`hopper_sac`), the rows the seed-batch work left to a GPU. It prints the device, the tests' outcome and the table,
and writes them under `--out`. Sized to end within 8 minutes on an H100; `--quick` shrinks the budgets to check the
script itself on a CPU. On a machine with PyTorch but without tidal's other packages, carry the wheels that
`benchmarks/gpu_wheels.sh` downloads.

    python benchmarks/gpu_check.py [--out DIR] [--quick]
"""
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def run_tests(out: Path) -> str:
    """`pytest -m gpu`: its last line, the full output in gpu_tests.log."""
    result = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-m', 'gpu', '-rs', 'tests'], cwd=ROOT,
                            capture_output=True, text=True)
    (out / 'gpu_tests.log').write_text(result.stdout + result.stderr)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else f'pytest exited {result.returncode} with no output'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=BENCH / 'results' / 'gpu_check')
    parser.add_argument('--quick', action='store_true', help='tiny budgets, to check the script on a CPU')
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    name = torch.cuda.get_device_name(0) if device == 'cuda' else 'CPU'
    start = time.perf_counter()
    print(f'device: {name}', flush=True)
    print(f'gpu tests: {run_tests(args.out)}', flush=True)
    runs = Path(tempfile.mkdtemp(prefix='gpu_check_runs_'))  # kept out of --out, which holds only the results
    rows = ['--device', device, '--out', str(args.out / 'seed_group'), '--runs', str(runs)]
    if args.quick:
        rows += ['--configs', 'pendulum_sac', '--seeds', '1', '2', '--steps', '50', '--warmup', '100']
    subprocess.run([sys.executable, str(BENCH / 'seed_group_throughput.py'), *rows], cwd=ROOT, check=True)
    print(f'gpu check: {time.perf_counter() - start:.0f} s', flush=True)


if __name__ == '__main__':
    sys.exit(main())
