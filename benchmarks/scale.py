"""How collection on Ray workers scales, measured with an env whose steps sleep: 1 to 32 workers of one env each.

`tidal/SimulatedCost-v0` (and the RLlib runner's identical wrapper) sleeps `step_seconds` per step, leaving the
CPU free, so even a 2-core machine runs 32 workers side by side and shows what a cluster would: where the
learner, the driver or Ray's per-worker cost stops the linear scaling. Measured, one run at a time:

1. Env cost 10 ms per step, 1, 2, 4, 8, 16 and 32 workers: tidal PPO `collector.mode=sync`, tidal PPO
   `collector.mode=async` (the next rollout collected while the learner trains on this one), tidal SAC
   `collector.mode=async` (Ape-X style) and RLlib PPO (`rllib_scale_runner.py`, its own venv).
2. Env costs 2 ms and 50 ms at 1, 4 and 16 workers: tidal PPO async and RLlib PPO (`--side-sync`: tidal PPO
   sync too).
3. The tidal PPO learn phase per rollout of 64 x N steps, in one process (`--measure-learner`), N up to 256.

PPO, both sides: CartPole-v1 dynamics (`cartpole_ppo` with its decays and normalisation off), a 64-step
fragment per worker per rollout (64 x N steps), minibatch 128, 10 epochs: the learner's work per env step is
constant, so the learner becomes the limit at some N. SAC: `pendulum_sac` on Pendulum-v1 dynamics, 8 env steps
per worker task and 8 updates per batch handed in (one update per env step, as the zoo config).

Each run is sized for `--steady-seconds` of steady state at an expected rate; its rate is taken between its
first and last train-log point (tidal: the TensorBoard event times of the train scalars, logged once per rollout;
RLlib: `iterations.csv`), which leaves out Ray start-up, building the actors, the first rollout and both
evaluations. Evaluation: one deterministic episode before learning and one at the end, nothing in between
(an evaluation episode of CartPole at 10 ms per step lasts up to 5 s); learning progress is also followed by
the training episodes' return (`collect_return`), which costs nothing.

Writes `results.json`, `table.md` (with a model fitted to these measurements and projected to 64, 128 and 256
workers) and `scaling.png` in `benchmarks/results/scale/` (`--quick`: in `benchmarks/results/scale/quick/`). The
full set takes about 75 minutes on an idle 2-core machine (start-up grows with the workers: each one's imports),
`--side-sync` adds about 12, `--quick` (10 ms, 1 and 4 workers) about 7:

    python benchmarks/scale.py [--steady-seconds 30] [--side-sync] [--quick] [--report-only] [--only VARIANT]
"""
import argparse
import csv
import json
import math
import re
import statistics
import struct
import sys
import time
from pathlib import Path

from common import (BENCH_DIR, RLLIB_VENV, Job, check_tidal_config, display_path, ensure_rllib_venv, read_evals,
                    run_lanes, shown_command, tidal_train_command, venv_python)

PPO_CONFIG, SAC_CONFIG = 'cartpole_ppo', 'pendulum_sac'
FRAGMENT, MINIBATCH, EPOCHS = 64, 128, 10  # rllib_scale_runner.py's ROLLOUT_FRAGMENT, MINIBATCH, EPOCHS
SAC_TASK = 8  # env steps per worker task (and updates per batch handed in)
MAIN_COST, SIDE_COSTS = 0.01, (0.002, 0.05)
WORKERS, SIDE_WORKERS, PROJECT_WORKERS = (1, 2, 4, 8, 16, 32), (1, 4, 16), (64, 128, 256)
QUICK_WORKERS = (1, 4)
GPU_LEARNER_SPEEDUP = 3.0  # assumed: a GPU learns this many times faster per env step than 1 CPU thread here
# variant -> label; the side costs run the variants of SIDE_VARIANTS
VARIANTS = {'ppo_sync': 'tidal PPO sync', 'ppo_async': 'tidal PPO async', 'sac_async': 'tidal SAC async',
            'rllib_ppo': 'RLlib PPO'}
SIDE_VARIANTS = ('ppo_async', 'rllib_ppo')  # and 'ppo_sync' with --side-sync
PPO_OVERRIDES = [
    'env.stop_value=null', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
    'policy.learn.lr_decay=false', 'policy.learn.clip_decay=false', 'policy.normalize.obs=false',
    'policy.normalize.reward=false', f'policy.learn.batch_size={MINIBATCH}', f'policy.learn.epoch_per_collect={EPOCHS}',
    'policy.learn.learning_rate=1e-3', 'policy.learn.entropy_weight=0.0', 'policy.learn.value_clip_ratio=null',
    'policy.learn.value_weight=0.5', 'policy.learn.grad_clip_norm=0.5', 'policy.model.encoder_hidden_sizes=[64,64]',
    'policy.model.activation=tanh', 'policy.model.share_encoder=false',
]
SAC_OVERRIDES = ['env.stop_value=null', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                 f'policy.collect.n_sample={SAC_TASK}', f'policy.learn.update_per_collect={SAC_TASK}']
NO_MIDRUN_EVAL = ['policy.eval.evaluator.eval_freq=1000000000', 'policy.eval.evaluator.eval_freq_env_steps=0']
# rough figures from this machine, only to size the runs and plan the total: PPO learner seconds per env step, SAC
# updates per second; a run's start-up and exit (seconds, plus seconds per worker: on 2 cores every worker's
# imports queue up) and the env steps of its two evaluation episodes
GUESS = {'ppo_learn_s_per_step': 3e-4, 'sac_updates_per_s': 50.0, 'startup_s': 20.0, 'startup_s_per_worker': 6.0,
         'rllib_startup_s': 25.0, 'rllib_startup_s_per_worker': 6.0, 'eval_steps': 900}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steady-seconds', type=float, default=30.0, help='steady-state seconds to aim for per run')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--threads', type=int, default=1, help='torch threads per process')
    parser.add_argument('--out', type=Path, default=None, help='output folder (default: benchmarks/results/scale)')
    parser.add_argument('--side-sync', action='store_true',
                        help='also tidal PPO sync at 2 ms and 50 ms (about 12 minutes more)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: 10 ms only, {QUICK_WORKERS} workers, 6 s of steady state')
    parser.add_argument('--report-only', action='store_true', help='rebuild the outputs from the run folders')
    parser.add_argument('--only', choices=sorted(VARIANTS), default=None,
                        help="run this variant's cells again (the other run folders are kept), then rebuild the outputs")
    parser.add_argument('--measure-learner', type=Path, default=None, help=argparse.SUPPRESS)  # internal
    args = parser.parse_args(argv)
    if args.quick:
        args.steady_seconds = min(args.steady_seconds, 6.0)
    if args.out is None:
        args.out = BENCH_DIR / 'results' / 'scale' / ('quick' if args.quick else '')
    return args


# ---------------------------------------------------------------- the grid and its jobs

def grid(quick: bool, side_sync: bool = False) -> list[tuple[str, float, int]]:
    """(variant, step seconds, workers) of every run, in the order they run."""
    if quick:
        return [(v, MAIN_COST, n) for v in VARIANTS for n in QUICK_WORKERS]
    side = ('ppo_sync', *SIDE_VARIANTS) if side_sync else SIDE_VARIANTS
    cells = [(v, MAIN_COST, n) for v in VARIANTS for n in WORKERS]
    return cells + [(v, cost, n) for cost in SIDE_COSTS for v in side for n in SIDE_WORKERS]


def run_name(variant: str, cost: float, workers: int) -> str:
    return f'{variant}_{cost * 1e3:g}ms_{workers}w'


def expected_rate(variant: str, cost: float, workers: int) -> float:
    """Env steps/s a run is sized for: linear scaling capped by a guessed learner."""
    if variant == 'sac_async':
        return min(workers / cost, GUESS['sac_updates_per_s'])
    return 1.0 / (cost / workers + GUESS['ppo_learn_s_per_step'])


def env_steps(variant: str, cost: float, workers: int, seconds: float) -> int:
    """The run's budget: `seconds` at the expected rate plus 2 rollouts, in whole rollouts (SAC: + warm-up)."""
    unit = SAC_TASK * workers if variant == 'sac_async' else FRAGMENT * workers
    steps = expected_rate(variant, cost, workers) * seconds
    if variant == 'sac_async':  # + pendulum_sac's random_collect_size and 2 train-log intervals
        return 1000 + unit * math.ceil((steps + 256) / unit)
    return unit * (math.ceil(steps / unit) + 2)


def planned_seconds(variant: str, cost: float, workers: int, seconds: float) -> float:
    """A rough wall time of the run, start-up and evaluations included, for the plan printed before starting."""
    steps = env_steps(variant, cost, workers, seconds) / expected_rate(variant, cost, workers)
    if variant == 'rllib_ppo':  # its evaluation env does not sleep
        return GUESS['rllib_startup_s'] + GUESS['rllib_startup_s_per_worker'] * workers + steps
    eval_s = (400 if variant == 'sac_async' else GUESS['eval_steps']) * cost
    return GUESS['startup_s'] + GUESS['startup_s_per_worker'] * workers + eval_s + steps


def sleeping_env(gym_id: str, cost: float) -> list[str]:
    """The overrides that make the run's envs `gym_id` with a sleep of `cost` seconds before every step."""
    return ['env.env_id=tidal/SimulatedCost-v0', f'env.env_kwargs={{env_id: {gym_id}, step_seconds: {cost:g}}}']


def tidal_overrides(variant: str, cost: float, workers: int) -> list[str]:
    gym_id = 'Pendulum-v1' if variant == 'sac_async' else 'CartPole-v1'
    common = [*sleeping_env(gym_id, cost), 'collector.type=ray', f'collector.num_workers={workers}',
              'collector.envs_per_worker=1', f'env.collector_env_num={workers}',
              f"collector.mode={variant.split('_')[1]}", *NO_MIDRUN_EVAL, 'policy.learn.learner.log_freq=1000000000']
    # the train log's points time the run: once per rollout (PPO), every 128 env steps (SAC, a few seconds)
    if variant == 'sac_async':
        return [*SAC_OVERRIDES, *common, 'policy.learn.learner.log_freq_env_steps=128']
    return [*PPO_OVERRIDES, f'policy.collect.n_sample={FRAGMENT * workers}', *common,
            f'policy.learn.learner.log_freq_env_steps={FRAGMENT * workers}']


def job(args: argparse.Namespace, rllib_python: Path, variant: str, cost: float, workers: int) -> Job:
    run_dir = args.out / 'runs' / run_name(variant, cost, workers)
    steps = env_steps(variant, cost, workers, args.steady_seconds)
    if variant == 'rllib_ppo':
        cmd = [str(rllib_python), display_path(BENCH_DIR / 'rllib_scale_runner.py'), '--num-env-runners',
               str(workers), '--step-seconds', f'{cost:g}', '--seed', str(args.seed), '--max-env-step', str(steps),
               '--threads', str(args.threads), '--out', display_path(run_dir)]
        return Job(run_name(variant, cost, workers), cmd, run_dir)
    config = SAC_CONFIG if variant == 'sac_async' else PPO_CONFIG
    cmd = tidal_train_command(config, args.seed, steps, run_dir, tidal_overrides(variant, cost, workers))
    return Job(run_name(variant, cost, workers), cmd, run_dir)


def learner_job(args: argparse.Namespace) -> Job:
    run_dir = args.out / 'runs' / 'learner'
    return Job('learner', [sys.executable, display_path(Path(__file__)), '--measure-learner', display_path(run_dir)],
               run_dir)


def accepted_variants(quick: bool) -> set[str]:
    """The variants tidal's config check accepts (PPO async needs the on-policy async mode); tells why not."""
    accepted = {'rllib_ppo'}
    for variant in ('ppo_sync', 'ppo_async', 'sac_async'):
        try:
            check_tidal_config(SAC_CONFIG if variant == 'sac_async' else PPO_CONFIG,
                               tidal_overrides(variant, MAIN_COST, max(QUICK_WORKERS if quick else WORKERS)))
            accepted.add(variant)
        except SystemExit as err:
            print(f'skipping {VARIANTS[variant]}: {err}', flush=True)
    return accepted


# ---------------------------------------------------------------- the learner, in this process

def measure_learner(run_dir: Path) -> None:
    """Seconds of tidal PPO's learn phase per rollout of 64 x N steps (plain CartPole-v1, local collector),
    median of 3, for every N measured or projected; writes learner.json."""
    sys.path.insert(0, str(BENCH_DIR.parent))
    import torch
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_policy
    from tidal.worker.collectors import build_collector
    from tidal.worker.feeds.rollout import RolloutFeed
    from tidal.worker.learner import Learner

    torch.set_num_threads(1)
    seconds = {}
    for workers in (*WORKERS, *PROJECT_WORKERS):
        cfg = load_config(PPO_CONFIG, 0, [*PPO_OVERRIDES, 'env.collector_env_num=8',
                                          f'policy.collect.n_sample={FRAGMENT * workers}'])
        policy = build_policy(cfg)
        collector = build_collector(cfg, policy)
        collector.reset(seed=0)
        feed = RolloutFeed(cfg, policy.views(), collector, Learner(policy.learn_mode, policy.device))
        rollout = collector.collect(FRAGMENT * workers)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            feed.learn(rollout)
            times.append(time.perf_counter() - start)
        seconds[workers] = statistics.median(times)
        collector.env.close()
        print(f'{workers} workers: learn {seconds[workers] * 1e3:.0f} ms per rollout', flush=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / 'learner.json').write_text(json.dumps({'learn_seconds_per_rollout': seconds}, indent=1) + '\n')


# ---------------------------------------------------------------- reading a run

def tensorboard_times(run_dir: Path, tag: str) -> list[tuple[float, int]]:
    """(wall time, env step) of every `tag` scalar in the run's event files (TFRecord framing read here)."""
    from tensorboardX.proto import event_pb2

    points = []
    for path in sorted((run_dir / 'log').glob('events.out.tfevents.*')):
        data = path.read_bytes()
        offset = 0
        while offset + 12 <= len(data):
            (length,) = struct.unpack('<Q', data[offset:offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12:offset + 12 + length])
            offset += 12 + length + 4
            if any(value.tag == tag for value in event.summary.value):
                points.append((event.wall_time, int(event.step)))
    return points


TRAIN_LINE = re.compile(r'train @ env step (\d+), iter (\d+): (.*)$')


def train_log(run_dir: Path) -> list[dict]:
    """The train lines of tidal's log.txt: env step, train iteration and the logged values."""
    rows = []
    for line in (run_dir / 'log.txt').read_text().splitlines():
        found = TRAIN_LINE.search(line)
        if found:
            values = dict(item.split('=', 1) for item in found.group(3).split(', '))
            rows.append({'env_step': int(found.group(1)), 'train_iter': int(found.group(2)),
                         **{k: float(v) for k, v in values.items()}})
    return rows


def steady(points: list[dict]) -> dict:
    """Rates between the first and the last point (each with wall_time, env_step, train_iter)."""
    first, last = points[0], points[-1]
    span = last['wall_time'] - first['wall_time']
    rollouts = len(points) - 1
    return {'seconds': span, 'env_steps': last['env_step'] - first['env_step'], 'points': len(points),
            'env_steps_per_s': (last['env_step'] - first['env_step']) / span,
            'updates_per_s': (last['train_iter'] - first['train_iter']) / span,
            'seconds_per_rollout': span / rollouts}


def read_tidal(run_dir: Path) -> dict:
    """Steady state of a tidal run: train-log points timed by their TensorBoard events."""
    lines = train_log(run_dir)
    times = dict((step, wall) for wall, step in tensorboard_times(run_dir, 'train/collect_seconds'))
    points = [{'wall_time': times[row['env_step']], **row} for row in lines if row['env_step'] in times]
    if len(points) < 2:
        raise ValueError(f'{display_path(run_dir)}: fewer than 2 train-log points')
    last = lines[-1]
    return {**steady(points), 'final_return': read_evals(run_dir)[-1]['return_mean'],
            'collect_return': [(row['env_step'], row['collect_return']) for row in lines if 'collect_return' in row],
            **{key: last[key] for key in ('staleness_mean', 'staleness_max', 'dropped_stale_steps') if key in last}}


def read_rllib(run_dir: Path) -> dict:
    """Steady state of an RLlib run from its iterations.csv, and its learner seconds per iteration."""
    with open(run_dir / 'iterations.csv', newline='') as f:
        points = [{k: float(v) if v else math.nan for k, v in row.items()} for row in csv.DictReader(f)]
    if len(points) < 2:
        raise ValueError(f'{display_path(run_dir)}: fewer than 2 iterations')
    out = steady(points)
    out['learn_seconds_per_rollout'] = (points[-1]['learn_seconds'] - points[0]['learn_seconds']) / (len(points) - 1)
    out['final_return'] = read_evals(run_dir)[-1]['return_mean']
    out['collect_return'] = [(int(p['env_step']), p['episode_return_mean']) for p in points
                             if math.isfinite(p.get('episode_return_mean', math.nan))]
    return out


# ---------------------------------------------------------------- the model

def fit_overhead(cost: float, measured: dict[int, float], learn_per_step: float) -> tuple[float, float]:
    """Least-squares c0, c1 of T(N) - 64 cost - L 64 N = c0 + c1 N over the measured seconds per rollout; a
    negative slope (noise, or too few points) is taken as 0 and c0 as the mean, and c0 is at least 0."""
    ns = sorted(measured)
    rest = [measured[n] - FRAGMENT * cost - learn_per_step * FRAGMENT * n for n in ns]
    mean_n, mean_r = statistics.fmean(ns), statistics.fmean(rest)
    c1 = 0.0
    if len(ns) > 1:
        c1 = max(0.0, sum((n - mean_n) * (r - mean_r) for n, r in zip(ns, rest))
                 / sum((n - mean_n) ** 2 for n in ns))
    return max(0.0, mean_r - c1 * mean_n), c1


def rollout_seconds(kind: str, cost: float, n: int, c0: float, c1: float, learn_per_step: float) -> float:
    """sync: T = 64 cost + c0 + c1 N + L 64 N; async: max(64 cost + c0 + c1 N, L 64 N)."""
    collect = FRAGMENT * cost + c0 + c1 * n
    learn = learn_per_step * FRAGMENT * n
    return max(collect, learn) if kind == 'async' else collect + learn


def build_model(runs: dict, learner: dict | None) -> dict:
    """c0 and c1 fitted on the 10 ms sync runs of each side (tidal PPO sync, RLlib PPO), the learner term L
    measured; projected at every env cost measured, where the 2 ms and 50 ms runs check the fit."""
    model: dict = {'fit_on_step_seconds': MAIN_COST, 'gpu_learner_speedup': GPU_LEARNER_SPEEDUP, 'sides': {}}
    tidal_l = None
    if learner:
        big = max(int(n) for n in learner['learn_seconds_per_rollout'])
        tidal_l = learner['learn_seconds_per_rollout'][str(big)] / (FRAGMENT * big)
    rllib = {n: r for (v, c, n), r in runs.items() if v == 'rllib_ppo' and c == MAIN_COST}
    rllib_l = rllib[max(rllib)]['learn_seconds_per_rollout'] / (FRAGMENT * max(rllib)) if rllib else None
    costs = sorted({key[1] for key in runs})
    for side, variant, per_step in (('tidal', 'ppo_sync', tidal_l), ('rllib', 'rllib_ppo', rllib_l)):
        measured = {n: r['seconds_per_rollout'] for (v, c, n), r in runs.items() if v == variant and c == MAIN_COST}
        if not measured or per_step is None:
            continue
        c0, c1 = fit_overhead(MAIN_COST, measured, per_step)
        lines = {'sync': (per_step, 'sync'), 'async': (per_step, 'async'),
                 'sync, GPU learner': (per_step / GPU_LEARNER_SPEEDUP, 'sync'),
                 'async, GPU learner': (per_step / GPU_LEARNER_SPEEDUP, 'async')}
        if side == 'rllib':  # RLlib's PPO has no async mode
            lines = {'sync': lines['sync']}
        model['sides'][side] = {'c0_s': c0, 'c1_s': c1, 'learn_s_per_env_step': per_step, 'projection': {
            cost: {label: {n: FRAGMENT * n / rollout_seconds(kind, cost, n, c0, c1, l)
                           for n in (*WORKERS, *PROJECT_WORKERS)} for label, (l, kind) in lines.items()}
            for cost in costs}}
    return model


# ---------------------------------------------------------------- outputs

def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    return '\n'.join(lines + ['| ' + ' | '.join(row) + ' |' for row in rows])


def measured_rows(runs: dict, learner: dict | None) -> list[list[str]]:
    rows = []
    for (variant, cost, n), r in sorted(runs.items(), key=lambda item: (item[0][1], item[0][0], item[0][2])):
        ideal = n / cost
        learn = ''
        if variant == 'rllib_ppo':
            learn = f"{r['learn_seconds_per_rollout']:.3f}"
        elif variant.startswith('ppo') and learner:
            learn = f"{learner['learn_seconds_per_rollout'].get(str(n), math.nan):.3f}"
        stale = (f"{r['staleness_mean']:.2f} / {r['staleness_max']:.0f} / {r['dropped_stale_steps']:.0f}"
                 if 'staleness_mean' in r else '')
        last_collect = f"{r['collect_return'][-1][1]:.0f}" if r['collect_return'] else ''
        rows.append([f'{cost * 1e3:g}', VARIANTS[variant], str(n), f"{r['env_steps_per_s']:.0f}", f'{ideal:.0f}',
                     f"{r['env_steps_per_s'] / ideal:.2f}", f"{r['updates_per_s']:.0f}",
                     '' if variant == 'sac_async' else f"{r['seconds_per_rollout']:.3f}", learn, stale, f"{r['seconds']:.0f}",
                     f"{r['final_return']:.0f}", last_collect])
    return rows


def projection_rows(model: dict) -> list[list[str]]:
    rows = []
    for side, fit in model['sides'].items():
        for cost, lines in fit['projection'].items():
            for label, rates in lines.items():
                per_step = fit['learn_s_per_env_step'] / (GPU_LEARNER_SPEEDUP if 'GPU' in label else 1)
                rows.append([f'{cost * 1e3:g}', f'{side} {label}', f'{per_step * 1e6:.0f}',
                             *[f'{rates[n]:.0f}' for n in (*WORKERS[-2:], *PROJECT_WORKERS)]])
    return rows


LINE_COLORS = ('C0', 'C1', 'C2', 'C3')  # one per variant; a model line takes its variant's colour


def plot_scaling(runs: dict, model: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    costs = sorted({key[1] for key in runs})
    fig, axes = plt.subplots(1, len(costs), figsize=(5.5 * len(costs), 4.5), squeeze=False)
    for ax, cost in zip(axes[0], costs):
        span = (*WORKERS, *PROJECT_WORKERS)
        ax.plot(span, [n / cost for n in span], color='0.6', linestyle=':', label='ideal: N / step seconds')
        for color, (variant, label) in zip(LINE_COLORS, VARIANTS.items()):
            cells = sorted((n, r['env_steps_per_s']) for (v, c, n), r in runs.items() if v == variant and c == cost)
            if cells:
                ax.plot(*zip(*cells), 'o-', color=color, label=label)
        for side, fit in model['sides'].items():
            for label, rates in fit['projection'].get(cost, {}).items():
                variant = 'rllib_ppo' if side == 'rllib' else f"ppo_{label.split(',')[0]}"
                ax.plot(list(rates), list(rates.values()), color=LINE_COLORS[list(VARIANTS).index(variant)],
                        linestyle='-.' if 'GPU' in label else '--', linewidth=1, label=f'model: {side} {label}')
        ax.set_xscale('log', base=2)
        ax.set_yscale('log')
        ax.set_xlabel('Ray workers (1 env each)')
        ax.set_ylabel('env steps / s (steady state)')
        ax.set_title(f'{cost * 1e3:g} ms per env step')
        ax.grid(True, which='both', alpha=0.3)
    labelled: dict[str, object] = {}  # every line once, whichever panel drew it
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, handle)
    fig.legend(list(labelled.values()), list(labelled), loc='lower center', ncol=5, fontsize=8)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def model_text(model: dict) -> list[str]:
    fits = [f"{side}: c0 = {fit['c0_s'] * 1e3:.1f} ms, c1 = {fit['c1_s'] * 1e3:.2f} ms per worker, "
            f"L = {fit['learn_s_per_env_step'] * 1e6:.0f} us per env step" for side, fit in model['sides'].items()]
    return [
        '## Model fitted on these measurements, projected to 64, 128 and 256 workers', '',
        'Seconds per PPO rollout of S = 64 N env steps (N workers, one env each, step cost t):', '',
        '    sync:  T(N) = 64 t + c0 + c1 N + L 64 N        async: T(N) = max(64 t + c0 + c1 N, L 64 N)',
        '    env steps/s = 64 N / T(N)', '',
        '- 64 t: one worker stepping its fragment; c0 + c1 N: what the driver and Ray add per rollout (weights put, '
        'task submission, gathering and moving the samples; c1 per worker), fitted by least squares on each '
        f"side's sync runs at {model['fit_on_step_seconds'] * 1e3:g} ms per step after taking off 64 t and the "
        'learn term; the runs at the other env costs check the fit;',
        '- L: learner seconds per env step. tidal: its learn phase measured in one process at the largest N '
        '(the "learn s / rollout" column shows how constant it is per step); RLlib: its `LearnerGroup.update` time '
        'in its 10 ms run with the most workers;',
        '- async overlaps collecting the next rollout with learning on this one, so the slower of the two sets the '
        'pace; its line uses the sync fit of c0 and c1 (the measured async points check it);',
        f"- GPU learner: L divided by {model['gpu_learner_speedup']:g}, an assumption (a 64x64 MLP with minibatch "
        '128 is launch-bound on a GPU, so it gains a few times, not the tens of times a large network does), not a '
        'measurement;',
        '- the fit comes from one 2-core machine where the driver, the learner and up to 32 sleeping workers share '
        "the cores: c1 carries that sharing, which a cluster would spread out, and none of the network's cost.", '',
        *[f'Fitted: {line}.' for line in fits], '',
    ]


def build_report(args: argparse.Namespace, cells: list[tuple[str, float, int]], failed: dict[str, str]) -> str:
    runs: dict = {}
    for variant, cost, n in cells:
        run_dir = args.out / 'runs' / run_name(variant, cost, n)
        try:
            runs[(variant, cost, n)] = (read_rllib if variant == 'rllib_ppo' else read_tidal)(run_dir)
        except (OSError, ValueError, IndexError, KeyError) as err:  # named without the machine's paths
            failed.setdefault(run_name(variant, cost, n), f'no result in {display_path(run_dir)} ({type(err).__name__})')
    learner_path = args.out / 'runs' / 'learner' / 'learner.json'
    learner = json.loads(learner_path.read_text()) if learner_path.exists() else None
    model = build_model(runs, learner)
    plot_scaling(runs, model, args.out / 'scaling.png')
    results = {'benchmark': 'scale', 'quick': args.quick, 'seed': args.seed, 'threads': args.threads,
               'steady_seconds': args.steady_seconds, 'fragment': FRAGMENT, 'minibatch': MINIBATCH, 'epochs': EPOCHS,
               'ppo_overrides': PPO_OVERRIDES, 'sac_overrides': SAC_OVERRIDES, 'learner': learner,
               'runs': {run_name(*key): {'variant': key[0], 'step_seconds': key[1], 'workers': key[2], **r}
                        for key, r in runs.items()},
               'model': model, 'failed': failed}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    header = ['env ms/step', 'variant', 'workers', 'env steps/s', 'ideal', 'efficiency', 'updates/s',
              's / rollout', 'learn s / rollout', 'staleness mean / max / dropped steps', 'steady s',
              'final eval return', 'last collect return']
    text = '\n'.join([
        '# How collection on Ray workers scales: tidal and RLlib, measured'
        + (' (smoke test: `--quick`, too short to quote)' if args.quick else ''), '',
        f'One run per cell (seed {args.seed}), one at a time, {args.threads} torch thread(s) per process; every '
        'env step sleeps the env cost first (tidal `tidal/SimulatedCost-v0`, the RLlib runner its own identical '
        'wrapper), so the workers leave the CPU free. Rates are the steady state between the first and last '
        'train-log point of each run (start-up, actor build, the first rollout and the evaluations left out). '
        'Efficiency = env steps/s / (N / step seconds), against ideal linear scaling.', '',
        f'PPO on both sides: CartPole-v1 dynamics, {FRAGMENT} steps per worker per rollout, minibatch {MINIBATCH}, '
        f'{EPOCHS} epochs, lr 1e-3, no decays, no normalisation, separate 64x64 tanh actor and critic. SAC: '
        f'`{SAC_CONFIG}` on Pendulum-v1 dynamics, async, {SAC_TASK} steps per worker task, one update per env step. '
        '"learn s / rollout": tidal measured in one process on plain CartPole (`--measure-learner`), RLlib its '
        'learner update time in the run. Evaluation: one episode before learning and one at the end only; '
        '"last collect return" is the training episodes\' mean return at the last train-log point.', '',
        table(header, measured_rows(runs, learner)), '',
        '![scaling](scaling.png)', '',
        *model_text(model),
        table(['env ms/step', 'model', 'L (us / env step)',
               *[f'env steps/s at {n}' for n in (*WORKERS[-2:], *PROJECT_WORKERS)]], projection_rows(model)), '',
        *(['Runs that failed or were skipped:', '', *[f'- {name}: {why}' for name, why in failed.items()], '']
          if failed else []),
        f'Command, from the repo root: `python benchmarks/scale.py{" --quick" if args.quick else ""}'
        f'{" --side-sync" if args.side_sync else ""} --steady-seconds {args.steady_seconds:g}`', ''])
    (args.out / 'table.md').write_text(text)
    return text


# ---------------------------------------------------------------- main

def run_all(args: argparse.Namespace, jobs: list[Job]) -> dict[str, str]:
    """Each job alone on the machine; a failed one is noted and the rest go on."""
    failed = {}
    for one in jobs:
        print(f'$ {shown_command(one.cmd, args.threads)}', flush=True)
        try:
            run_lanes([[one]], args.threads, pin=False)
        except SystemExit as err:
            print(err, flush=True)
            failed[one.name] = f'exited with an error, see {display_path(one.log_path)}'
    return failed


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.measure_learner is not None:
        measure_learner(args.measure_learner)
        return
    cells = grid(args.quick, args.side_sync)
    failed: dict[str, str] = {}
    if not args.report_only:
        start = time.perf_counter()
        rllib_python = ensure_rllib_venv()
        print(f'RLlib venv ready in {time.perf_counter() - start:.0f}s', flush=True)
        accepted = accepted_variants(args.quick)
        failed.update({run_name(*cell): 'variant refused by the config check' for cell in cells
                       if cell[0] not in accepted})
        cells = [cell for cell in cells if cell[0] in accepted]
        to_run = [cell for cell in cells if args.only in (None, cell[0])]
        plan = sum(planned_seconds(*cell, args.steady_seconds) for cell in to_run) + 30
        print(f'{len(to_run)} runs, planned about {plan / 60:.0f} minutes', flush=True)
        if args.only is None:
            run_all(args, [learner_job(args)])
        failed.update(run_all(args, [job(args, rllib_python, *cell) for cell in to_run]))
        print(f'all runs done in {(time.perf_counter() - start) / 60:.1f} minutes', flush=True)
    print('\n' + build_report(args, cells, failed))
    print(f'outputs in {display_path(args.out)}: results.json, table.md, scaling.png')


if __name__ == '__main__':
    sys.exit(main())
