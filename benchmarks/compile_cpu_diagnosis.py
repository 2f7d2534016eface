"""Why `policy.learn.compile` makes an off-policy update slower on this CPU: what the compiled update spends its time
on, kernel by kernel, against the same update eager.

Three measurements, one torch thread:

1. one SAC update (`update_floor.py`'s batch and zoo config), eager and compiled ('default'), timed alternately in
   one process; the compiled one profiled with inductor's per-kernel spans, its costliest ops and kernels listed;
2. the kernel that stands out, ReLU's saved mask (`x <= 0` stored as bools for the backward), alone on a
   [2, 256, 256] tensor: eager, compiled with inductor's vectorised C++ and compiled with scalar C++;
3. the fixed cost of calling a compiled region (guards, wrappers) on a tiny function, against eager.

    python benchmarks/compile_cpu_diagnosis.py [--updates 100] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

from common import BENCH_DIR, display_path
from update_floor import one_update, updates_per_s


def per_call_us(fn: Callable[[], Any], n: int, rounds: int = 5) -> float:
    """Median over `rounds` of the mean time of `n` calls (each round warmed up first), in microseconds."""
    return statistics.median(1e6 / updates_per_s(fn, n) for _ in range(rounds))


def update_times(updates: int) -> tuple[dict[str, float], list[tuple[str, float, int]]]:
    """ms per SAC update eager and compiled (alternating blocks), and the compiled update's costliest ops."""
    import torch._inductor.config as inductor_config
    inductor_config.cpp.enable_kernel_profile = True
    eager, compiled = one_update('sac'), one_update('sac', extra=('policy.learn.compile=default',))
    for _ in range(5):
        compiled()
    times: dict[str, list[float]] = {'eager': [], 'compiled': []}
    for _ in range(4):
        times['eager'].append(1e3 / updates_per_s(eager, updates // 4))
        times['compiled'].append(1e3 / updates_per_s(compiled, updates // 4))
    n = 10
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            compiled()
    rows = sorted(((e.key, e.self_cpu_time_total / n / 1e3, e.count // n) for e in prof.key_averages()),
                  key=lambda row: -row[1])
    return {name: statistics.median(values) for name, values in times.items()}, rows[:12]


def mask_kernel_us(n: int) -> dict[str, float]:
    """ReLU's forward with its saved mask on [2, 256, 256], eager and compiled (vectorised and scalar C++)."""
    import torch._inductor.config as inductor_config
    x = torch.randn(2, 256, 256)

    def relu_and_mask(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(t), t <= 0

    result = {'eager relu': per_call_us(lambda: torch.relu(x), n),
              'eager relu + mask': per_call_us(lambda: relu_and_mask(x), n)}
    vectorised = torch.compile(relu_and_mask)
    result['compiled relu + mask, vectorised C++'] = per_call_us(lambda: vectorised(x), n)
    torch._dynamo.reset()
    inductor_config.cpp.vec_isa_ok = False
    try:
        scalar = torch.compile(relu_and_mask)
        result['compiled relu + mask, scalar C++'] = per_call_us(lambda: scalar(x), n)
    finally:
        inductor_config.cpp.vec_isa_ok = None
        torch._dynamo.reset()
    return result


def region_call_us(n: int) -> dict[str, float]:
    """A function of one tiny op, eager and compiled: the compiled call's fixed cost."""
    x = torch.randn(8)

    def tiny(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    compiled = torch.compile(tiny)
    return {'eager': per_call_us(lambda: tiny(x), n), 'compiled': per_call_us(lambda: compiled(x), n)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--updates', type=int, default=100, help='timed updates per arm')
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'compile_cpu_diagnosis')
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    updates, top = update_times(args.updates)
    results = {'update_ms': updates, 'compiled_top_self_ms': top, 'mask_kernel_us': mask_kernel_us(300),
               'region_call_us': region_call_us(1000), 'torch': torch.__version__}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    print(f"SAC update: eager {updates['eager']:.2f} ms, compiled {updates['compiled']:.2f} ms")
    print('compiled update, costliest ops and kernels (self ms per update, calls per update):')
    for name, ms, count in top:
        print(f'  {ms:7.3f} ms  x{count:<3d} {name[:90]}')
    for section in ('mask_kernel_us', 'region_call_us'):
        print(section + ': ' + ', '.join(f'{k} {v:.0f} us' for k, v in results[section].items()))
    print(f'outputs in {display_path(args.out)}: results.json')


if __name__ == '__main__':
    sys.exit(main())
