"""How tidal's collection scales over Ray workers: against its local pipeline and against RLlib, plus a
projection to 8, 32 and 128 workers.

Measured, one run at a time (throughput needs both cores), 2 envs in total in every variant:
1. PPO on LunarLander-v3 for the same env-step budget: tidal local (2 envs), tidal Ray 1 worker x 2 envs and
   2 workers x 1 env (`collector.type=ray`, sync mode), RLlib PPO (`rllib_ppo_runner.py`, its own venv) with
   1 env runner x 2 envs and 2 runners x 1 env. tidal gets the runner's PPO settings through `--set`; both sides
   evaluate 5 deterministic episodes before learning, every 10 rollouts and at the end.
2. SAC on Pendulum-v1 (`pendulum_sac`, 2 envs, 2 steps and 2 updates per collect): local, Ray 1 and 2 workers.
3. Per-call overhead, in one process (`--measure-overhead`, started by this script): RayCollector against
   SampleCollector on the PPO config, ms per collect call of 256 and 2048 steps, the workers' own seconds,
   bytes per transition, bytes and put time of the weights sent per call, and the PPO learn phase per rollout.
4. From those, T(N) = T_serial + T_env / N + c_worker * N per 2048-step PPO iteration (Amdahl's law with a
   per-worker cost), projected to 8, 32 and 128 workers. A projection from a 2-core machine, not a measurement.

Writes `results.json`, `table.md`, `ppo_curves.png`, `sac_curves.png` and `projection.png` in
`benchmarks/results/scale/` (the full run takes about 25 minutes on an idle 2-core machine):

    python benchmarks/scale.py [--ppo-steps 163840] [--sac-steps 10000] [--quick] [--report-only]
"""
import argparse
import importlib.metadata
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

from common import (BENCH_DIR, RLLIB_VENV, Job, check_tidal_config, display_path, ensure_rllib_venv, read_run,
                    run_lanes, shown_command, tidal_train_command, venv_python)
from report import curve_mean, fmt_steps, plot_curves

PPO_CONFIG, SAC_CONFIG = 'lunarlander_ppo', 'pendulum_sac'
ROLLOUT, BATCH, EPOCHS = 2048, 64, 10  # rllib_ppo_runner.py's TRAIN_BATCH, MINIBATCH, EPOCHS
ENVS = 2  # envs in total in every variant
EVAL_EPISODES, EVAL_ROLLOUTS = 5, 10  # both sides: 5 episodes every 10 rollouts (and before and after)
UPDATES_PER_ROLLOUT = EPOCHS * math.ceil(ROLLOUT / BATCH)
# rllib_ppo_runner.py's settings as tidal config keys
PPO_OVERRIDES = [
    'env.stop_value=null', f'env.collector_env_num={ENVS}', f'env.evaluator_env_num={EVAL_EPISODES}',
    f'env.n_evaluator_episode={EVAL_EPISODES}', f'policy.collect.n_sample={ROLLOUT}',
    'policy.collect.discount_factor=0.99', 'policy.collect.gae_lambda=0.95', f'policy.learn.batch_size={BATCH}',
    f'policy.learn.epoch_per_collect={EPOCHS}', 'policy.learn.learning_rate=3e-4', 'policy.learn.clip_ratio=0.2',
    'policy.learn.value_clip_ratio=null', 'policy.learn.value_weight=0.5', 'policy.learn.entropy_weight=0.01',
    'policy.learn.adv_norm=true', 'policy.learn.grad_clip_norm=0.5', 'policy.learn.lr_decay=false',
    'policy.learn.clip_decay=false', 'policy.normalize.obs=false', 'policy.normalize.reward=false',
    'policy.model.encoder_hidden_sizes=[64,64]', 'policy.model.activation=tanh', 'policy.model.share_encoder=false',
]
SAC_OVERRIDES = ['env.stop_value=null', f'env.collector_env_num={ENVS}', f'policy.collect.n_sample={ENVS}',
                 f'policy.learn.update_per_collect={ENVS}']  # one update per env step, as the zoo config
# variant -> (label, workers, envs per worker, collector overrides); workers 0 is the local collector
COLLECTORS = {
    'local': ('tidal local', 0, ENVS, ['collector.type=local']),
    'ray1': ('tidal Ray 1 worker', 1, ENVS, ['collector.type=ray', 'collector.num_workers=1',
                                             f'collector.envs_per_worker={ENVS}', 'collector.mode=sync']),
    'ray2': ('tidal Ray 2 workers', 2, 1, ['collector.type=ray', 'collector.num_workers=2',
                                           'collector.envs_per_worker=1', 'collector.mode=sync']),
}
RLLIB = {'rllib1': ('RLlib 1 env runner', 1, ENVS), 'rllib2': ('RLlib 2 env runners', 2, 1)}
SIZES = (256, ROLLOUT)  # env steps per collect call in the overhead measurement
PROJECT_WORKERS = (1, 2, 8, 32, 128)
QUICK = {'ppo_steps': ROLLOUT, 'sac_steps': 1100, 'repeats': 3, 'eval_rollouts': 1}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ppo-steps', type=int, default=80 * ROLLOUT, help=f'env steps per PPO run (x {ROLLOUT})')
    parser.add_argument('--sac-steps', type=int, default=10_000, help='env steps per SAC run')
    parser.add_argument('--repeats', type=int, default=20, help='timed collect calls per size and collector')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--threads', type=int, default=1, help='torch threads per process')
    parser.add_argument('--out', type=Path, default=None, help='output folder (default: benchmarks/results/scale)')
    parser.add_argument('--quick', action='store_true', help='smoke test: 1 PPO rollout, 1100 SAC steps, 3 repeats')
    parser.add_argument('--report-only', action='store_true', help='rebuild the outputs from the run folders')
    parser.add_argument('--measure-overhead', type=Path, default=None, help=argparse.SUPPRESS)  # internal
    args = parser.parse_args(argv)
    args.eval_rollouts = EVAL_ROLLOUTS
    if args.quick:
        args.ppo_steps, args.sac_steps, args.repeats = QUICK['ppo_steps'], QUICK['sac_steps'], QUICK['repeats']
        args.eval_rollouts = QUICK['eval_rollouts']
    if args.ppo_steps % ROLLOUT:
        parser.error(f'--ppo-steps must be a multiple of {ROLLOUT}')
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('scale_quick' if args.quick else 'scale')
    return args


# ---------------------------------------------------------------- jobs

def ppo_overrides(args: argparse.Namespace, variant: str) -> list[str]:
    return [*PPO_OVERRIDES, f'policy.eval.evaluator.eval_freq={args.eval_rollouts * UPDATES_PER_ROLLOUT}',
            *COLLECTORS[variant][3]]


def jobs(args: argparse.Namespace, rllib_python: Path) -> dict[str, Job]:
    """Every run, keyed `ppo_<variant>`, `sac_<variant>` and `overhead`, in the order they run."""
    runs = args.out / 'runs'
    out: dict[str, Job] = {}
    for variant in COLLECTORS:
        run_dir = runs / f'ppo_{variant}'
        out[f'ppo_{variant}'] = Job(f'PPO {variant}', tidal_train_command(
            PPO_CONFIG, args.seed, args.ppo_steps, run_dir, ppo_overrides(args, variant)), run_dir)
    for variant, (_, runners, per_runner) in RLLIB.items():
        run_dir = runs / f'ppo_{variant}'
        cmd = [str(rllib_python), display_path(BENCH_DIR / 'rllib_ppo_runner.py'), '--num-env-runners', str(runners),
               '--envs-per-runner', str(per_runner), '--seed', str(args.seed), '--max-env-step', str(args.ppo_steps),
               '--eval-every', str(args.eval_rollouts * ROLLOUT), '--eval-episodes', str(EVAL_EPISODES),
               '--threads', str(args.threads), '--out', display_path(run_dir)]
        out[f'ppo_{variant}'] = Job(f'PPO {variant}', cmd, run_dir)
    for variant, (_, _, _, collector) in COLLECTORS.items():
        run_dir = runs / f'sac_{variant}'
        out[f'sac_{variant}'] = Job(f'SAC {variant}', tidal_train_command(
            SAC_CONFIG, args.seed, args.sac_steps, run_dir, [*SAC_OVERRIDES, *collector]), run_dir)
    run_dir = runs / 'overhead'
    out['overhead'] = Job('overhead', [sys.executable, display_path(Path(__file__)), '--measure-overhead',
                                       display_path(run_dir), '--repeats', str(args.repeats)], run_dir)
    return out


# ---------------------------------------------------------------- per-call overhead, in this process

def _leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    else:
        yield tree


def measure_overhead(run_dir: Path, repeats: int) -> None:
    """Times collect calls of each collector (and the PPO learn phase) on the PPO config; writes overhead.json."""
    sys.path.insert(0, str(BENCH_DIR.parent))
    import ray
    import torch
    from tidal.worker.feeds.rollout import RolloutFeed, rollout_rows
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_env_manager, build_policy
    from tidal.worker.collector import SampleCollector
    from tidal.worker.learner import Learner
    from tidal.worker.ray_collector import RayCollector

    torch.set_num_threads(1)
    result: dict = {'repeats': repeats, 'collectors': {}}
    for variant, (_, workers, per_worker, collector_sets) in COLLECTORS.items():
        cfg = load_config(PPO_CONFIG, 0, [*PPO_OVERRIDES, *collector_sets])
        policy = build_policy(cfg)
        if workers:
            collector = RayCollector(cfg, policy)
        else:
            collector = SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)
        collector.reset(seed=0)
        entry: dict = {'workers': workers, 'envs_per_worker': per_worker, 'sizes': {}}
        for size in SIZES:
            collector.collect(size)  # warm-up
            walls, worker_s = [], []
            for _ in range(repeats):
                before = collector.monitor()['collect_seconds'] if workers else 0.0
                start = time.perf_counter()
                sample = collector.collect(size)
                walls.append(time.perf_counter() - start)
                if workers:  # the workers' own seconds, summed over them: their mean per call
                    worker_s.append((collector.monitor()['collect_seconds'] - before) / workers)
            rows = rollout_rows(sample)
            nbytes = sum(t.numel() * t.element_size() for t in _leaves(sample) if isinstance(t, torch.Tensor))
            entry['sizes'][str(size)] = {
                'rows': rows, 'wall_ms': 1e3 * statistics.median(walls), 'wall_ms_all': [1e3 * w for w in walls],
                'worker_ms': 1e3 * statistics.median(worker_s) if workers else None,
                'bytes_per_transition': nbytes / rows}
        weights = policy.weights()
        entry['weight_bytes'] = sum(t.numel() * t.element_size() for t in weights['model'].values())
        if workers:
            puts = []
            for _ in range(repeats):
                start = time.perf_counter()
                ray.put(weights)
                puts.append(time.perf_counter() - start)
            entry['weight_put_ms'] = 1e3 * statistics.median(puts)
        else:  # the PPO learn phase of one rollout (10 epochs of minibatch 64), which no collector overlaps
            feed = RolloutFeed(cfg, policy, collector, Learner(policy.learn_mode, policy.device))
            learns = []
            for _ in range(max(1, min(repeats, 5))):
                rollout = collector.collect(ROLLOUT)
                start = time.perf_counter()
                feed.learn(rollout)
                learns.append(time.perf_counter() - start)
            entry['learn_ms'] = 1e3 * statistics.median(learns)
        collector.env.close()
        result['collectors'][variant] = entry
        print(variant, json.dumps(entry['sizes']), flush=True)
    if ray.is_initialized():
        ray.shutdown()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / 'overhead.json').write_text(json.dumps(result, indent=1) + '\n')


# ---------------------------------------------------------------- the model

def fit_model(overhead: dict, worker_size: int = SIZES[0]) -> dict:
    """Per 2048-step PPO iteration with N workers of one env each (seconds):
    T(N) = T_serial + T_env / N + c_worker * N, with T_serial = T_learn + c_call + S * c_row.

    - T_learn: the learn phase of one rollout (measured in-process);
    - T_env: a worker stepping all S steps alone with one env (2-worker measurement, per step, times S);
    - Ray overhead of a call = wall time - the workers' own (mean) time; c_row (per transition moved) from the
      1-worker calls of 256 and 2048 steps; c_worker from 2 workers minus 1 at `worker_size` steps; c_call the
      rest (weights put, task submission, gather, interleave). Negative fits are clipped to 0.
    The 2-worker calls of 2048 steps also carry waiting for the slower worker and the two workers sharing the
    machine's 2 cores with the driver; the 256-step calls carry little of either, so `worker_size` 256 is the
    main fit and 2048 the pessimistic one.
    """
    col = overhead['collectors']
    s = ROLLOUT

    def ray_overhead(variant: str, size: int) -> float:
        cell = col[variant]['sizes'][str(size)]
        return (cell['wall_ms'] - cell['worker_ms']) / 1e3

    c_row = max(0.0, (ray_overhead('ray1', s) - ray_overhead('ray1', SIZES[0])) / (s - SIZES[0]))
    c_worker = max(0.0, ray_overhead('ray2', worker_size) - ray_overhead('ray1', worker_size))
    c_call = max(0.0, ray_overhead('ray1', worker_size) - c_worker - worker_size * c_row)
    per_step = col['ray2']['sizes'][str(s)]['worker_ms'] / 1e3 / (s / 2)
    t_env = s * per_step
    t_learn = col['local']['learn_ms'] / 1e3
    t_serial = t_learn + c_call + s * c_row

    def iteration(n: int) -> float:
        return t_serial + t_env / n + c_worker * n

    serial_share = t_serial / iteration(1)
    best = math.sqrt(t_env / c_worker) if c_worker > 0 else math.inf
    projection = {n: {'iteration_s': iteration(n), 'env_steps_per_s': s / iteration(n),
                      'speedup_over_1': iteration(1) / iteration(n)} for n in PROJECT_WORKERS}
    return {'steps_per_iteration': s, 'c_worker_from_calls_of': worker_size, 't_learn_s': t_learn, 'c_call_s': c_call, 'c_row_s': c_row,
            'c_worker_s': c_worker, 't_env_s': t_env, 'env_step_s': per_step, 't_serial_s': t_serial,
            'serial_share': serial_share, 'amdahl_speedup_bound': 1 / serial_share,
            'amdahl_env_steps_per_s_bound': s / t_serial, 'best_workers': best, 'projection': projection}


def plot_projection(model: dict, pessimistic: dict, measured: dict[int, float], rllib: dict[int, float],
                    path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    grid = sorted({1, *[round(2 ** (k / 4)) for k in range(29)]})
    s = model['steps_per_iteration']
    for fit, label in ((model, 'model T(N) (projection)'), (pessimistic, 'model, pessimistic c_worker')):
        ax.plot(grid, [s / (fit['t_serial_s'] + fit['t_env_s'] / n + fit['c_worker_s'] * n) for n in grid],
                label=label)
    ax.axhline(model['amdahl_env_steps_per_s_bound'], color='0.3', linestyle='--', linewidth=1,
               label='Amdahl bound S / T_serial')
    ax.plot(list(measured), list(measured.values()), 'o', label=f'tidal Ray, measured (N x {ENVS}/N envs, whole run)')
    ax.plot(list(rllib), list(rllib.values()), 's', label=f'RLlib, measured (N x {ENVS}/N envs, whole run)')
    ax.set_xscale('log', base=2)
    ax.set_xlabel('rollout workers N (one env each)')
    ax.set_ylabel('PPO env steps/s')
    ax.set_title('PPO on LunarLander-v3: projection from a 2-core machine')
    ax.grid(alpha=0.3)
    ax.legend(loc='best')
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------- report

def last_logged(run_dir: Path, key: str) -> float | None:
    """The last value of `key` in a tidal run's log.txt (e.g. the collector's collect_seconds)."""
    path = run_dir / 'log.txt'
    found = re.findall(rf'\b{key}=([-0-9.e+]+)', path.read_text()) if path.exists() else []
    return float(found[-1]) if found else None


def table(head: list[str], rows: list[list[str]]) -> str:
    return '\n'.join(['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
                     + ['| ' + ' | '.join(row) + ' |' for row in rows])


def build_report(args: argparse.Namespace, all_jobs: dict[str, Job]) -> str:
    ppo_keys = [*COLLECTORS, *RLLIB]
    ppo = {key: read_run(all_jobs[f'ppo_{key}'].run_dir) for key in ppo_keys}
    extra = {key: json.loads((all_jobs[f'ppo_{key}'].run_dir / 'summary.json').read_text()) for key in RLLIB}
    sac = {key: read_run(all_jobs[f'sac_{key}'].run_dir) for key in COLLECTORS}
    overhead = json.loads((all_jobs['overhead'].run_dir / 'overhead.json').read_text())
    model = fit_model(overhead)
    pessimistic = fit_model(overhead, ROLLOUT)
    labels = {**{k: v[0] for k, v in COLLECTORS.items()}, **{k: v[0] for k, v in RLLIB.items()}}
    layout = {**{k: f'{v[1]} x {v[2]}' if v[1] else f'local, {v[2]} envs' for k, v in COLLECTORS.items()},
              **{k: f'{v[1]} x {v[2]}' for k, v in RLLIB.items()}}
    rllib_info = next((json.loads(p.read_text()) for key in RLLIB
                       if (p := all_jobs[f'ppo_{key}'].run_dir / 'run_info.json').exists()), {})
    vers = {'tidal': {n: importlib.metadata.version(n) for n in ('tidal', 'torch', 'ray', 'gymnasium')},
            'rllib_venv': rllib_info.get('versions', {})}
    commands = {key: shown_command(job.cmd, args.threads) for key, job in all_jobs.items()}
    commands['overhead'] = shown_command(['python', *all_jobs['overhead'].cmd[1:]], args.threads)  # no machine path
    args.out.mkdir(parents=True, exist_ok=True)

    plot_curves({labels[k]: [ppo[k]] for k in ppo_keys}, args.out / 'ppo_curves.png',
                f'PPO on LunarLander-v3, {ENVS} envs in total, seed {args.seed}')
    plot_curves({labels[k]: [sac[k]] for k in COLLECTORS}, args.out / 'sac_curves.png',
                f'SAC on Pendulum-v1, {ENVS} envs in total, seed {args.seed}')
    measured = {COLLECTORS[k][1]: ppo[k]['summary']['env_steps_per_s'] for k in ('ray1', 'ray2')}
    rllib_rates = {RLLIB[k][1]: ppo[k]['summary']['env_steps_per_s'] for k in RLLIB}
    plot_projection(model, pessimistic, measured, rllib_rates, args.out / 'projection.png')

    ppo_rows = []
    for key in ppo_keys:
        summ, evals = ppo[key]['summary'], ppo[key]['evals']
        if key in RLLIB:
            excl = f"{extra[key]['train_env_steps_per_s']:.0f}"
            split = f"sample {extra[key]['sample_time']:.0f}, learn {extra[key]['learn_time']:.0f}, " \
                    f"eval {extra[key]['eval_time']:.0f}"
        else:
            excl = 'n/a'
            seconds = last_logged(all_jobs[f'ppo_{key}'].run_dir, 'collect_seconds')
            split = f'workers collect {seconds:.1f} (summed)' if seconds is not None else ''
        ppo_rows.append([labels[key], layout[key], f"{summ['wall_time']:.0f}", f"{summ['env_steps_per_s']:.0f}", excl,
                         f"{summ['updates_per_s']:.0f}", f"{evals[-1]['return_mean']:.1f}",
                         f"{curve_mean(evals, args.ppo_steps):.1f}", split])
    ratios = {n: ppo[f'ray{n}']['summary']['env_steps_per_s'] / ppo[f'rllib{n}']['summary']['env_steps_per_s']
              for n in (1, 2)}
    sac_rows = [[labels[k], layout[k], f"{sac[k]['summary']['wall_time']:.0f}",
                 f"{sac[k]['summary']['env_steps_per_s']:.1f}", f"{sac[k]['summary']['updates_per_s']:.1f}",
                 f"{sac[k]['evals'][-1]['return_mean']:.1f}"] for k in COLLECTORS]
    col = overhead['collectors']
    over_rows = []
    for key in COLLECTORS:
        entry = col[key]
        cells = [labels[key], layout[key]]
        for size in SIZES:
            cell = entry['sizes'][str(size)]
            ray_ms = cell['wall_ms'] - cell['worker_ms'] if cell['worker_ms'] is not None else None
            cells += [f"{cell['wall_ms']:.1f}", '' if ray_ms is None else f"{cell['worker_ms']:.1f} / {ray_ms:.1f}"]
        cells += [f"{entry['sizes'][str(ROLLOUT)]['bytes_per_transition']:.0f}", f"{entry['weight_bytes']}",
                  f"{entry['weight_put_ms']:.2f}" if 'weight_put_ms' in entry else '']
        over_rows.append(cells)
    proj_rows = [[str(n), f"{p['iteration_s'] * 1e3:.0f}", f"{p['env_steps_per_s']:.0f}", f"{p['speedup_over_1']:.2f}",
                  f"{q['env_steps_per_s']:.0f}", f"{q['speedup_over_1']:.2f}"]
                 for (n, p), q in zip(model['projection'].items(), pessimistic['projection'].values())]
    m = model

    results = {'benchmark': 'scale', 'seed': args.seed, 'threads': args.threads, 'ppo_steps': args.ppo_steps,
               'sac_steps': args.sac_steps, 'envs_total': ENVS, 'versions': vers, 'commands': commands,
               'tidal_ppo_overrides': ppo_overrides(args, 'local'), 'sac_overrides': SAC_OVERRIDES,
               'rllib_settings': rllib_info.get('settings'), 'tidal_over_rllib_env_steps_per_s': ratios,
               'ppo': {k: {**ppo[k], 'extra': extra.get(k)} for k in ppo_keys}, 'sac': sac,
               'overhead': overhead, 'model': model,
               'model_pessimistic': pessimistic}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    text = '\n'.join([
        '# Collection over Ray workers: tidal local, tidal Ray and RLlib', '',
        f'One run per variant (seed {args.seed}), one at a time on the whole machine, {args.threads} torch '
        f'thread(s) per process; every variant steps {ENVS} envs in total (workers x envs per worker).', '',
        f'## PPO on LunarLander-v3, {fmt_steps(args.ppo_steps)} env steps ({args.ppo_steps // ROLLOUT} rollouts)', '',
        f'Same PPO on both sides (`rllib_ppo_runner.py`\'s settings; tidal `{PPO_CONFIG}` with overrides): '
        f'{ROLLOUT}-step rollouts over all envs, {EPOCHS} epochs of minibatch {BATCH} ({UPDATES_PER_ROLLOUT} updates '
        'per rollout), lr 3e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, no value clipping, value weight 0.5, entropy '
        '0.01, gradient norm clipped at 0.5, separate [64, 64] tanh actor and critic, no observation or reward '
        'normalisation, no KL penalty. Advantages are normalised per minibatch in tidal, over the whole batch in '
        f'RLlib. Both evaluate {EVAL_EPISODES} deterministic episodes ({EVAL_EPISODES} envs) before learning, every '
        f'{args.eval_rollouts} rollout(s) and at the end. tidal Ray runs use sync mode: one weights put per rollout, '
        'all workers gathered.', '',
        table(['variant', 'workers x envs', 'wall (s)', 'env steps/s', 'env steps/s excl. eval', 'updates/s',
               'final return', 'mean eval return', 'time split (s)'], ppo_rows), '',
        f"tidal / RLlib env steps/s (whole runs): **{ratios[1]:.2f}** with 1 worker, **{ratios[2]:.2f}** with 2 "
        "workers (goal: >= 1).", '',
        '![PPO curves](ppo_curves.png)', '',
        f'## SAC on Pendulum-v1, {fmt_steps(args.sac_steps)} env steps', '',
        f'`{SAC_CONFIG}` with {ENVS} envs, {ENVS} env steps and {ENVS} updates per collect call (one update per '
        'env step, as shipped); its 1000 random warm-up steps count in the budget.', '',
        table(['variant', 'workers x envs', 'wall (s)', 'env steps/s', 'updates/s', 'final return'], sac_rows), '',
        '![SAC curves](sac_curves.png)', '',
        '## Per-call overhead (in one process)', '',
        f'`{PPO_CONFIG}` with the PPO settings above; median over {overhead["repeats"]} calls after one warm-up '
        'call. "workers / Ray" splits a Ray call into the workers\' own collect time (their mean) and the rest '
        '(weights put, task submission and scheduling, moving the samples, interleaving).', '',
        table(['collector', 'workers x envs', f'ms / collect {SIZES[0]}', 'workers / Ray ms',
               f'ms / collect {ROLLOUT}', 'workers / Ray ms', 'bytes / transition', 'weight bytes per call',
               'weight put (ms)'], over_rows), '',
        f"PPO learn phase of one {ROLLOUT}-step rollout ({UPDATES_PER_ROLLOUT} updates): "
        f"{col['local']['learn_ms']:.0f} ms.", '',
        '## Projection to more workers (a model, not a measurement)', '',
        f'Time per {ROLLOUT}-step PPO iteration with N workers of one env each, sync mode (Amdahl\'s law plus a '
        'per-worker cost):', '',
        '    T(N) = T_serial + T_env / N + c_worker * N,   T_serial = T_learn + c_call + S * c_row,   '
        'throughput(N) = S / T(N)', '',
        f"- S = {ROLLOUT} env steps per iteration;",
        f"- T_learn = {m['t_learn_s'] * 1e3:.0f} ms: the learn phase, measured above;",
        f"- T_env = {m['t_env_s'] * 1e3:.0f} ms: one worker stepping S steps with one env "
        f"({m['env_step_s'] * 1e6:.0f} us per step, from the 2-worker calls);",
        f"- c_call = {m['c_call_s'] * 1e3:.1f} ms per call (weights put, submit, gather), c_row = "
        f"{m['c_row_s'] * 1e6:.2f} us per transition moved (from 1-worker calls of {SIZES[0]} and {ROLLOUT} steps), "
        f"c_worker = {m['c_worker_s'] * 1e3:.1f} ms per worker per call (Ray overhead of 2 workers minus 1, "
        f"{SIZES[0]}-step calls);",
        f"- pessimistic variant: c_worker = {pessimistic['c_worker_s'] * 1e3:.1f} ms from the {ROLLOUT}-step calls, "
        'which also hold waiting for the slower worker and 2 workers plus the driver sharing 2 cores '
        f"(c_call then {pessimistic['c_call_s'] * 1e3:.1f} ms);",
        f"- serial share s = T_serial / T(1) = {m['serial_share']:.3f}: Amdahl bound 1/s = "
        f"{m['amdahl_speedup_bound']:.2f}x, i.e. at most {m['amdahl_env_steps_per_s_bound']:.0f} env steps/s however "
        f"many workers; with c_worker the best N is sqrt(T_env / c_worker) = "
        + (f"{m['best_workers']:.1f}." if math.isfinite(m['best_workers']) else 'unbounded (c_worker fitted as 0).'),
        f"- pessimistic: best N = " + (f"{pessimistic['best_workers']:.1f}." if math.isfinite(pessimistic['best_workers'])
                                       else 'unbounded.'),
        '', table(['workers N', 'T(N) (ms)', 'env steps/s', 'speedup over N=1', 'env steps/s (pessimistic)',
                   'speedup (pessimistic)'], proj_rows), '',
        f"Measured whole-run rates for comparison: tidal Ray 1 x {ENVS}: {measured[1]:.0f}, tidal Ray 2 x 1: "
        f"{measured[2]:.0f} env steps/s (evaluation included).", '',
        '![projection](projection.png)', '',
        'This is a projection from measurements on a 2-core machine, not a measurement at 8, 32 or 128 workers. '
        'With 2 cores the 2-worker calls share the cores with the driver and Ray\'s own processes, so c_worker and '
        'the per-step time are upper-bound-ish; on a cluster the per-worker cost also includes the network '
        '(weights out, samples back: bytes per transition x rows), and PPO keeps its 2048-step rollout, so at 128 '
        'workers each steps only 16 env steps per call.', '',
        'Notes:',
        '- env steps/s and updates/s are over the whole run, evaluation included, on both sides; "excl. eval" is '
        'only available from the RLlib runner (its `train_env_steps_per_s`); tidal records no evaluation time, '
        'its "workers collect" is the collector\'s `collect_seconds` (summed over workers) from the train log.',
        '- Ray start-up (and RLlib\'s Algorithm build) is outside both sides\' wall time.',
        f"- Versions: tidal {vers['tidal']['tidal']}, torch {vers['tidal']['torch']}, ray {vers['tidal']['ray']}, "
        f"gymnasium {vers['tidal']['gymnasium']}; RLlib venv: ray {vers['rllib_venv'].get('ray')}, torch "
        f"{vers['rllib_venv'].get('torch')}, gymnasium {vers['rllib_venv'].get('gymnasium')}.",
        '', 'Commands, from the repo root:', '', '```', *commands.values(), '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.measure_overhead is not None:
        measure_overhead(args.measure_overhead, args.repeats)
        return
    rllib_python = venv_python(RLLIB_VENV) if args.report_only else ensure_rllib_venv()
    all_jobs = jobs(args, rllib_python)
    if not args.report_only:
        for variant in COLLECTORS:
            check_tidal_config(PPO_CONFIG, ppo_overrides(args, variant))
            check_tidal_config(SAC_CONFIG, [*SAC_OVERRIDES, *COLLECTORS[variant][3]])
        for job in all_jobs.values():
            print(f'$ {shown_command(job.cmd, args.threads)}', flush=True)
        # one lane, unpinned: each run has the whole machine (Ray's workers need the second core)
        run_lanes([list(all_jobs.values())], args.threads, pin=False)
    print('\n' + build_report(args, all_jobs))
    print(f'outputs in {display_path(args.out)}: results.json, table.md, ppo_curves.png, sac_curves.png, '
          'projection.png')


if __name__ == '__main__':
    sys.exit(main())
