"""One off-policy update against this machine's arithmetic floor: the matrix products it must do, timed alone.

For each policy the script records one update of its zoo config on a fixed batch with the profiler (every
matrix product with its shapes), counts their FLOPs, then times exactly those products back to back on random
tensors of the same shapes: that time is the floor no implementation of the same update can beat on this
machine and thread count. The update's own time is reported as the fraction floor / update (1.0: nothing but
arithmetic), beside where the rest goes by the profiler's self times (matrix products, elementwise ops, the
optimizer, and what no op accounts for: Python, dispatch, autograd's bookkeeping) and the ops run per update
(on a GPU, each is a kernel launch).

    python benchmarks/update_floor.py [--policies sac td3 dqn discrete_sac crossq] [--threads 1] [--updates 200]
        [--lean-step-rounds 8] [--device cuda] [--out DIR]

On a GPU (`--device cuda`) it also counts the kernels each update launches, the number fewer, fatter ops would cut.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from common import BENCH_DIR, display_path
from tidal.entry.setup import load_config
from tidal.policies import common
from tidal.policies.fused_adam import _ADAM_STEP, FusedAdam
from tidal.worker.builders import build_policy, set_seed

BATCH = 256
# policy -> (zoo config, overrides): the zoo's networks; CrossQ with critics as narrow as SAC's, as its benchmark
POLICIES: dict[str, tuple[str, tuple[str, ...]]] = {
    'sac': ('pendulum_sac', ()),
    'td3': ('pendulum_td3', ()),
    'dqn': ('cartpole_dqn', ()),
    'discrete_sac': ('cartpole_discrete_sac', ()),
    'crossq': ('pendulum_crossq', ('policy.model.critic_hidden_sizes=[256,256]',)),
    # DQN as its benchmark against SB3 runs it (dqn_cartpole.py): batch 64, the gradient norm clipped at 10
    'dqn_sb3_settings': ('cartpole_dqn', ('policy.learn.batch_size=64', 'policy.learn.grad_clip_norm=10',
                                          'policy.model.dueling=false', 'policy.learn.double_q=false')),
    # CQL on Hopper: 3 x 10 proposed actions per state through both critics, 7680 rows a batch (not run by default)
    'cql': ('hopper_cql', ()),
}
DEFAULT_POLICIES = [name for name in POLICIES if name != 'cql']
MATMULS = {'aten::mm': 'mm', 'aten::addmm': 'addmm', 'aten::bmm': 'bmm', 'aten::baddbmm': 'baddbmm'}
OPTIMIZER = ('aten::_fused_adam', 'aten::_foreach')
# ops that compute nothing themselves: views, metadata, allocation, and the wrappers whose children do the work
NOT_KERNELS = frozenset(f'aten::{name}' for name in (
    'as_strided', 'view', '_unsafe_view', 'detach', 'resolve_conj', 'resolve_neg', 'empty', 'empty_strided',
    'empty_like', 't', 'transpose', 'expand', 'unsqueeze', 'squeeze', 'select', 'narrow', 'slice', 'reshape',
    'alias', 'permute', '_reshape_alias', 'lift_fresh', 'result_type', 'flatten', 'unflatten', 'split', 'chunk',
    'unbind', 'as_strided_', 'item', '_local_scalar_dense', 'to', '_to_copy', 'clone', 'contiguous'))


def replay_batch(cfg: Any) -> dict[str, torch.Tensor]:
    """A fixed replayed batch of the config's shapes and batch size (flat observations)."""
    g = torch.Generator().manual_seed(0)
    rows = int(cfg.policy.learn.batch_size)
    obs_dim = int(cfg.policy.model.obs_shape)
    discrete = 'discrete' in cfg.policy.type or cfg.policy.type == 'dqn'
    action_shape = cfg.policy.model.action_shape
    action = (torch.randint(0, int(action_shape), (rows,), generator=g) if discrete
              else torch.rand(rows, int(action_shape), generator=g) * 2 - 1)
    return dict(obs=torch.randn(rows, obs_dim, generator=g), action=action, reward=torch.randn(rows, generator=g),
                next_obs=torch.randn(rows, obs_dim, generator=g), terminated=torch.zeros(rows, dtype=torch.bool),
                truncated=torch.zeros(rows, dtype=torch.bool))


def one_update(name: str, device: str = 'cpu', extra: tuple[str, ...] = ()) -> Callable[[], None]:
    """One update of `name`'s config (with the `extra` overrides) on a fixed batch, as a call."""
    config, overrides = POLICIES[name]
    set_seed(0)
    cfg = load_config(config, overrides=[f'policy.learn.batch_size={BATCH}', f'policy.device={device}', *overrides,
                                         *extra])
    policy = build_policy(cfg, enable_field=('learn',))
    batch = {key: value.to(device) for key, value in replay_batch(cfg).items()}
    forward = policy.learn_mode.forward
    return lambda: forward(dict(batch))


def synchronize(device: str) -> None:
    """Wait for the device's queued work (a GPU's), so that a timer stops when the work is done."""
    if torch.device(device).type == 'cuda':
        torch.cuda.synchronize()


def updates_per_s(update: Callable[[], None], n: int, device: str = 'cpu') -> float:
    for _ in range(max(10, n // 10)):
        update()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(n):
        update()
    synchronize(device)
    return n / (time.perf_counter() - start)


def recorded_update(update: Callable[[], None], n: int = 20, device: str = 'cpu'
                    ) -> tuple[list[tuple[str, list]], dict[str, float], dict[str, int]]:
    """From `n` profiled updates: the matrix products of one update with their input shapes, the shares of its
    profiled wall time by the ops' self times (what no op accounts for is Python, dispatch and autograd's
    bookkeeping), and the counts of ops per update (`kernels` computes, `host_reads` waits for a value; on a GPU
    also `gpu_kernels`, the kernels it launched)."""
    for _ in range(5):
        update()
    on_gpu = torch.device(device).type == 'cuda'
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if on_gpu else [])]
    synchronize(device)
    start = time.perf_counter()
    with profile(activities=activities, record_shapes=True) as prof:
        for _ in range(n):
            update()
        synchronize(device)
    wall = (time.perf_counter() - start) * 1e6
    events = [event for event in prof.events() if event.name.startswith('aten::')]
    products = [(MATMULS[event.name], event.input_shapes) for event in events if event.name in MATMULS]
    times: Counter = Counter()
    for event in events:
        if event.name in MATMULS:
            times['matrix products'] += event.self_cpu_time_total
        elif any(event.name.startswith(prefix) for prefix in OPTIMIZER):
            times['optimizer'] += event.self_cpu_time_total
        else:
            times['elementwise and other ops'] += event.self_cpu_time_total
    times['Python, dispatch, autograd'] = max(0.0, wall - sum(times.values()))
    shares = {key: value / wall for key, value in times.items()}
    leaves = sum(1 for event in events if not any(child.name.startswith('aten::') for child in event.cpu_children))
    counts = {'leaf_ops': leaves // n, 'kernels': sum(1 for event in events if _is_kernel(event)) // n,
              'host_reads': sum(1 for event in events if event.name == 'aten::_local_scalar_dense') // n}
    if on_gpu:
        counts['gpu_kernels'] = sum(1 for event in prof.events() if event.device_type == DeviceType.CUDA) // n
    return products[:len(products) // n], shares, counts


def _is_kernel(event: Any) -> bool:
    """An op that computes (on a GPU, one kernel launch; on the CPU also the copy that turns a Python scalar
    operand into a tensor): a matrix product, or an op that is not a view or wrapper and has no computing
    child of its own."""
    if event.name in MATMULS:
        return True
    if event.name in NOT_KERNELS:
        return False
    return not any(child.name.startswith('aten::') and child.name not in NOT_KERNELS for child in event.cpu_children)


def product_inputs(kind: str, shapes: list, device: str = 'cpu'
                   ) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    op = {'mm': torch.mm, 'addmm': torch.addmm, 'bmm': torch.bmm, 'baddbmm': torch.baddbmm}[kind]
    tensors = tuple(torch.randn(shape, device=device) for shape in shapes if shape)
    return op, tensors[:3] if kind in ('addmm', 'baddbmm') else tensors[:2]


def flops(kind: str, shapes: list) -> int:
    a, b = (shapes[1], shapes[2]) if kind in ('addmm', 'baddbmm') else (shapes[0], shapes[1])
    batch = a[0] if len(a) == 3 else 1
    return 2 * batch * a[-2] * a[-1] * b[-1]


def floor_seconds(products: list[tuple[str, list]], repeats: int, device: str = 'cpu') -> float:
    """Seconds per update of the recorded products alone, back to back."""
    calls = [product_inputs(kind, shapes, device) for kind, shapes in products]
    for op, args in calls:
        op(*args)
    best = float('inf')
    for _ in range(5):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repeats):
            for op, args in calls:
                op(*args)
        synchronize(device)
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def measure(name: str, updates: int, device: str = 'cpu') -> dict[str, Any]:
    update = one_update(name, device)
    products, shares, counts = recorded_update(update, device=device)
    total_flops = sum(flops(kind, shapes) for kind, shapes in products)
    floor = floor_seconds(products, max(20, updates // 4), device)
    rate = updates_per_s(update, updates, device)
    update_s = 1 / rate
    return {'updates_per_s': rate, 'update_ms': update_s * 1e3, 'floor_ms': floor * 1e3,
            'fraction_of_floor': floor / update_s, 'matrix_products': len(products),
            'gflop_per_update': total_flops / 1e9, 'floor_gflop_per_s': total_flops / floor / 1e9,
            'ops_per_update': counts['leaf_ops'], 'kernels_per_update': counts['kernels'],
            'host_reads_per_update': counts['host_reads'], 'gpu_kernels_per_update': counts.get('gpu_kernels'),
            'profiled_time_shares': shares}


def lean_step_ratio(name: str, rounds: int, updates: int) -> dict[str, float]:
    """ms per update with tidal's lean optimizer path (FusedAdam's step, `clip_grad_norm`) and with torch's own
    (Adam's step, `torch.nn.utils.clip_grad_norm_`), swapped between blocks of `updates` updates, alternating for
    `rounds` rounds in this process, and their ratio."""
    lean_step, lean_clip = FusedAdam.step, common.clip_grad_norm

    def torch_clip(parameters: list[torch.Tensor], max_norm: float | None) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(parameters, math.inf if max_norm is None else max_norm)

    update = one_update(name)
    times: dict[str, list[float]] = {'lean': [], 'torch': []}
    try:
        for _ in range(rounds):
            for arm, step, clip in (('torch', _ADAM_STEP, torch_clip), ('lean', lean_step, lean_clip)):
                FusedAdam.step, common.clip_grad_norm = step, clip  # type: ignore[method-assign]
                times[arm].append(1e3 / updates_per_s(update, updates))
    finally:
        FusedAdam.step, common.clip_grad_norm = lean_step, lean_clip  # type: ignore[method-assign]
    medians = {arm: statistics.median(values) for arm, values in times.items()}
    return {'lean_ms': medians['lean'], 'torch_ms': medians['torch'], 'ratio': medians['lean'] / medians['torch']}


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ['| policy | update (ms) | floor (ms) | floor / update | GFLOP per update | floor GFLOP/s | products | '
             'leaf ops | kernels | host reads |', '|---|---|---|---|---|---|---|---|---|---|']
    for name, r in results.items():
        lines.append(f"| `{name}` | {r['update_ms']:.2f} | {r['floor_ms']:.2f} | **{r['fraction_of_floor']:.2f}** | "
                     f"{r['gflop_per_update']:.3f} | {r['floor_gflop_per_s']:.1f} | {r['matrix_products']} | "
                     f"{r['ops_per_update']} | {r['kernels_per_update']} | {r['host_reads_per_update']} |")
    gpu = {name: r['gpu_kernels_per_update'] for name, r in results.items() if r.get('gpu_kernels_per_update')}
    if gpu:
        lines += ['', '| policy | GPU kernels launched per update |', '|---|---|',
                  *(f'| `{name}` | {count} |' for name, count in gpu.items())]
    columns = list(next(iter(results.values()))['profiled_time_shares'])
    lines += ['', 'Where a profiled update spends its time (self times of its ops):', '',
              '| policy | ' + ' | '.join(columns) + ' |', '|---|' + '---|' * len(columns)]
    for name, r in results.items():
        lines.append(f'| `{name}` | ' + ' | '.join(f"{r['profiled_time_shares'].get(c, 0.0):.0%}" for c in columns)
                     + ' |')
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--policies', nargs='+', choices=sorted(POLICIES), default=DEFAULT_POLICIES)
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--device', default='cpu', help="where the updates run ('cuda': the GPU kernels counted too)")
    parser.add_argument('--updates', type=int, default=200, help='timed updates per policy')
    parser.add_argument('--lean-step-rounds', type=int, default=0,
                        help="also time each update with tidal's lean optimizer path against torch's own, "
                             "alternating this many rounds of --updates/4 updates each")
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'update_floor')
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = {name: measure(name, args.updates, args.device) for name in args.policies}
    lean = ({name: lean_step_ratio(name, args.lean_step_rounds, max(10, args.updates // 4))
             for name in args.policies} if args.lean_step_rounds else {})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'results.json').write_text(json.dumps({'threads': args.threads, 'device': args.device, 'batch': BATCH,
                                                       'policies': results,
                                                       'lean_step': lean}, indent=1) + '\n')
    text = table(results)
    if lean:
        text += ("\n\n| policy | update, torch's step and clip (ms) | update, tidal's (ms) | tidal's / torch's |\n"
                 '|---|---|---|---|\n'
                 + '\n'.join(f"| `{name}` | {r['torch_ms']:.2f} | {r['lean_ms']:.2f} | **{r['ratio']:.3f}** |"
                             for name, r in lean.items()))
    (args.out / 'table.md').write_text(text + '\n')
    print(text)
    print(f'outputs in {display_path(args.out)}: results.json, table.md')


if __name__ == '__main__':
    sys.exit(main())
