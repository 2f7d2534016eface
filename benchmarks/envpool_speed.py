"""Env steps/s of tidal's env managers with 8 envs: EnvPool against gymnasium's sync and async vector envs.

Every variant is a tidal env manager, so each number includes what a run pays per step (the Step record,
episode bookkeeping, the finite check): 'base' (gymnasium's SyncVectorEnv), 'subprocess' (AsyncVectorEnv,
one process per env) and 'envpool' with 1 and 2 C++ threads. Random actions, drawn before the clock starts;
after a warm-up, `--repeats` windows of `--seconds` each on the same envs, and the median is reported.
Tasks: CartPole-v1 (classic control), Hopper-v5 (MuJoCo) and Pong (Atari: the 'atari' env type's
preprocessing, or gymnasium's AtariPreprocessing and FrameStackObservation where that type is missing).

It also checks whether EnvPool's dynamics are gymnasium's: gymnasium's env is put in the state of EnvPool's
and both take the same action; the largest difference of the next observations and rewards is recorded.

Writes `results.json`, `table.md` and `speed.png` in `benchmarks/results/envpool_speed/` (about 5 minutes):

    python benchmarks/envpool_speed.py [--seconds 4] [--repeats 3] [--quick]
"""
import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from common import BENCH_DIR, REPO_ROOT, display_path

sys.path.insert(0, str(REPO_ROOT))
warnings.filterwarnings('ignore', message='.*(precision lowered|out of date|settotalmass).*')

NUM_ENVS = 8
TASKS = {  # name -> env section
    'CartPole-v1': dict(type='gym', env_id='CartPole-v1'),
    'Hopper-v5': dict(type='gym', env_id='Hopper-v5'),
    'Pong': dict(type='atari', env_id='PongNoFrameskip-v4'),
}
MANAGERS = {  # variant -> (label, manager type, EnvPool threads)
    'base': ('gymnasium sync (base)', 'base', None),
    'subprocess': ('gymnasium async (subprocess)', 'subprocess', None),
    'envpool1': ('EnvPool, 1 thread', 'envpool', 1),
    'envpool2': ('EnvPool, 2 threads', 'envpool', 2),
}
DYNAMICS_TASKS = ('CartPole-v1', 'Pendulum-v1', 'Hopper-v5', 'HalfCheetah-v5', 'Walker2d-v5')


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=4.0, help='length of one timed window')
    parser.add_argument('--repeats', type=int, default=3, help='timed windows per task and manager')
    parser.add_argument('--warmup', type=float, default=1.0, help='seconds stepped before the first window')
    parser.add_argument('--tasks', nargs='+', default=list(TASKS), choices=list(TASKS))
    parser.add_argument('--note', default='', help='what else ran on the machine, for the table')
    parser.add_argument('--out', type=Path, default=None)
    parser.add_argument('--quick', action='store_true', help='smoke test: 0.3 s windows, 2 repeats')
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.repeats, args.warmup = 0.3, 2, 0.1
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('envpool_speed_quick' if args.quick else 'envpool_speed')
    return args


# ---------------------------------------------------------------- env managers

def env_maker(env_cfg: dict) -> tuple[Callable[[], Any], str]:
    """A function making one tidal-wrapped gymnasium env of the task, and how its preprocessing was built."""
    from tidal.envs import GymEnv
    if env_cfg['type'] == 'gym':
        return GymEnv(env_cfg).make, 'GymEnv'
    try:
        from tidal.envs.atari_env import AtariEnv
    except ImportError:
        return functools.partial(gymnasium_atari, env_cfg['env_id']), 'AtariPreprocessing + FrameStackObservation'
    return functools.partial(AtariEnv(env_cfg).make, 'collector'), "tidal env type 'atari'"


def gymnasium_atari(env_id: str) -> Any:
    """The standard Atari preprocessing from gymnasium's own wrappers, stacks channel-last like EnvPool's here."""
    import ale_py  # noqa: F401  (registers the ALE ids)
    import gymnasium
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformObservation
    game = env_id.removesuffix('NoFrameskip-v4')
    env = gymnasium.make(f'ALE/{game}-v5', frameskip=1, repeat_action_probability=0.0)
    env = FrameStackObservation(AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84), 4)
    space = gymnasium.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    return TransformObservation(env, lambda obs: np.moveaxis(obs, 0, -1), space)


def build_manager(variant: str, env_cfg: dict) -> Any:
    from tidal.envs import make_env_manager
    from tidal.envs.envpool_manager import EnvPoolManager
    _, manager_type, threads = MANAGERS[variant]
    make, _ = env_maker(env_cfg)
    if manager_type == 'envpool':
        return EnvPoolManager([make] * NUM_ENVS, num_threads=threads, name=env_cfg['env_id'], role='collector',
                              env_cfg=env_cfg)
    return make_env_manager(make, manager_type, NUM_ENVS, env_cfg['env_id'], 'collector')


def time_manager(variant: str, env_cfg: dict, args: argparse.Namespace) -> dict:
    """Env steps/s of each timed window, and the episodes that ended in them."""
    started = time.perf_counter()
    manager = build_manager(variant, env_cfg)
    build_s = time.perf_counter() - started
    try:
        manager.reset(seed=0)
        actions = [manager.sample_actions() for _ in range(256)]
        step_for(manager, actions, args.warmup)
        rates, episodes = [], 0
        for _ in range(args.repeats):
            steps, seconds, ended = step_for(manager, actions, args.seconds)
            rates.append(steps * NUM_ENVS / seconds)
            episodes += ended
    finally:
        manager.close()
    return dict(steps_per_s=rates, median=statistics.median(rates), episodes=episodes, build_s=round(build_s, 2))


def step_for(manager: Any, actions: list, seconds: float) -> tuple[int, float, int]:
    """Steps until `seconds` have passed (checked every 16 steps): (steps, seconds taken, episodes ended)."""
    steps = ended = 0
    started = time.perf_counter()
    while True:
        for _ in range(16):
            ended += int(manager.step(actions[steps % len(actions)]).done.sum())
            steps += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return steps, elapsed, ended


# ---------------------------------------------------------------- same state, same action

def dynamics_gap(task: str, steps: int = 300) -> dict:
    """Puts gymnasium's env into EnvPool's state before each step, takes the same random action in both and
    records the largest |difference| of the next observations and rewards. MuJoCo states are read back from
    the observation, which clips velocities to [-10, 10] in Hopper and Walker2d: steps from states with a
    velocity beyond 10 are skipped."""
    import envpool
    import gymnasium
    rng = np.random.default_rng(0)
    pool = envpool.make(task, env_type='gymnasium', num_envs=1, seed=0)
    env = gymnasium.make(task).unwrapped
    env.reset(seed=0)
    space = pool.action_space
    obs, _ = pool.reset()
    first_obs_gap = float(np.abs(obs[0] - env.reset(seed=0)[0]).max())
    obs_gap = reward_gap = 0.0
    compared = 0
    for _ in range(steps):
        state = obs[0].astype(np.float64)
        action = (int(rng.integers(space.n)) if isinstance(space, gymnasium.spaces.Discrete)
                  else rng.uniform(space.low, space.high).astype(np.float64))
        exact = put_state(env, task, state)
        expected, expected_reward, *_ = env.step(action)
        obs, reward, terminated, truncated, _ = pool.step(np.asarray([action]))
        if terminated[0] or truncated[0]:
            obs, _ = pool.reset()
            continue
        if exact:
            obs_gap = max(obs_gap, float(np.abs(expected - obs[0]).max()))
            reward_gap = max(reward_gap, abs(float(expected_reward) - float(reward[0])))
            compared += 1
    pool.close()
    env.close()
    return dict(compared_steps=compared, max_obs_gap=obs_gap, max_reward_gap=reward_gap,
                first_obs_gap_same_seed=first_obs_gap)


def atari_gap(steps: int = 300) -> dict | None:
    """Pong through the 'atari' env type on gymnasium and on EnvPool, the same random actions from a reset with
    one no-op (no randomness left on either side): how many pixels of the newest frame differ, and the returns."""
    try:
        from tidal.envs.atari_env import AtariEnv
    except ImportError:
        return None
    from tidal.envs import make_env_manager
    cfg = dict(type='atari', env_id='PongNoFrameskip-v4', noop_max=1)
    atari = AtariEnv(cfg)
    env = atari.make('evaluator')
    expected, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    with make_env_manager(lambda: atari.make('evaluator'), 'envpool', 1, cfg['env_id'], 'evaluator',
                          env_cfg=cfg) as manager:
        obs = manager.reset(seed=0)[0]
        differing = [float((expected[..., -1] != obs[..., -1]).mean())]
        returns = [0.0, 0.0]
        for _ in range(steps):
            action = int(rng.integers(6))
            expected, reward, *_ = env.step(action)
            step = manager.step(np.array([action]))
            differing.append(float((expected[..., -1] != step.next_obs[0][..., -1]).mean()))
            returns[0] += float(reward)
            returns[1] += float(step.reward[0])
    env.close()
    return dict(steps=steps, reset_pixels_differing=differing[0], median_pixels_differing=statistics.median(differing),
                max_pixels_differing=max(differing[1:]), gymnasium_return=returns[0], envpool_return=returns[1])


def put_state(env: Any, task: str, obs: np.ndarray) -> bool:
    """Sets gymnasium's env to the state `obs` shows; False where the observation does not hold it exactly."""
    if task.startswith('CartPole'):
        env.state = obs.copy()
        env.steps_beyond_terminated = None  # a state EnvPool reached after gymnasium's episode had ended
        return True
    if task.startswith('Pendulum'):
        env.state = np.array([np.arctan2(obs[1], obs[0]), obs[2]])
        return True
    qpos, qvel = env.data.qpos.copy(), env.data.qvel.copy()
    shown = len(qpos) - 1  # the x position is left out of the observation; the dynamics do not depend on it
    qpos[1:], qvel[:] = obs[:shown], obs[shown:shown + len(qvel)]
    env.set_state(qpos, qvel)
    return bool(np.abs(qvel).max() < 9.999)


# ---------------------------------------------------------------- report

def report(results: dict) -> str:
    lines = ['# EnvPool against gymnasium\'s vector envs, through tidal\'s env managers', '',
             f"{NUM_ENVS} envs, random actions, env steps/s (all envs together): median of {results['repeats']} "
             f"windows of {results['seconds']:g} s after a {results['warmup']:g} s warm-up, on the same envs. "
             f"{results['machine']}."]
    if results['note']:
        lines += ['', results['note']]
    header = ' | '.join(label for label, _, _ in MANAGERS.values())
    lines += ['', f'| task | {header} | fastest | EnvPool / best gymnasium |', '|---|' + '---|' * (len(MANAGERS) + 2)]
    for task, by_variant in results['speed'].items():
        medians = {v: by_variant[v]['median'] for v in MANAGERS if v in by_variant}
        fastest = max(medians, key=lambda v: medians[v])
        gym_best = max(medians.get('base', 0.0), medians.get('subprocess', 0.0))
        pool_best = max(medians.get('envpool1', 0.0), medians.get('envpool2', 0.0))
        cells = [f"{medians[v]:,.0f}" if v in medians else 'n/a' for v in MANAGERS]
        ratio = f'{pool_best / gym_best:.1f}x' if gym_best else 'n/a'
        lines.append(f"| {task} | {' | '.join(cells)} | {MANAGERS[fastest][0]} | {ratio} |")
    lines += ['', 'The gymnasium side of each task: ' + '; '.join(
        f"{task}: {results['preprocessing'][task]}" for task in results['speed']) + '.', '',
        '![env steps/s](speed.png)', '',
        '## Same state, same action: EnvPool\'s dynamics against gymnasium\'s', '',
        'gymnasium\'s env set to the state of EnvPool\'s before each step, both given the same random action; '
        'largest |difference| over the compared steps. MuJoCo states come back from the observation, so steps '
        'from states with a velocity beyond 10 (which Hopper\'s and Walker2d\'s observations clip) are left out. '
        'The last column compares the first observations of both with seed 0.', '',
        '| task | compared steps | max next-obs gap | max reward gap | first obs gap, same seed |',
        '|---|---|---|---|---|']
    for task, gap in results['dynamics'].items():
        lines.append(f"| {task} | {gap['compared_steps']} | {gap['max_obs_gap']:.1e} | {gap['max_reward_gap']:.1e} "
                     f"| {gap['first_obs_gap_same_seed']:.2g} |")
    pong = results.get('atari')
    if pong:
        lines += ['', f"Pong (`PongNoFrameskip-v4`, the 'atari' env type's evaluator envs, one no-op so neither "
                  f"side draws): the same {pong['steps']} random actions from a reset on gymnasium and on "
                  f"EnvPool. Pixels of the newest frame that differ: {pong['reset_pixels_differing']:.1%} at the "
                  f"reset, median {pong['median_pixels_differing']:.1%}, at most "
                  f"{pong['max_pixels_differing']:.1%} after it; "
                  f"game score {pong['gymnasium_return']:g} on gymnasium, {pong['envpool_return']:g} on EnvPool."]
    return '\n'.join(lines) + '\n'


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    tasks = list(results['speed'])
    width = 0.8 / len(MANAGERS)
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, (variant, (label, _, _)) in enumerate(MANAGERS.items()):
        values = [results['speed'][task].get(variant, {}).get('median', 0.0) for task in tasks]
        ax.bar(np.arange(len(tasks)) + (i - (len(MANAGERS) - 1) / 2) * width, values, width, label=label)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_yscale('log')
    ax.set_ylabel(f'env steps/s ({NUM_ENVS} envs, log scale)')
    ax.set_title('tidal env managers: EnvPool against gymnasium')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import envpool
    import gymnasium
    results: dict = dict(seconds=args.seconds, repeats=args.repeats, warmup=args.warmup, num_envs=NUM_ENVS,
                         note=args.note, machine=f'{os.cpu_count()} cores, {platform.machine()}',
                         versions=dict(envpool=envpool.__version__, gymnasium=gymnasium.__version__),
                         speed={}, preprocessing={}, dynamics={})
    for task in args.tasks:
        env_cfg = TASKS[task]
        results['preprocessing'][task] = env_maker(env_cfg)[1]
        results['speed'][task] = {}
        for variant in MANAGERS:
            timing = time_manager(variant, env_cfg, args)
            results['speed'][task][variant] = timing
            print(f"{task:12s} {MANAGERS[variant][0]:30s} {timing['median']:10,.0f} env steps/s "
                  f"(windows {', '.join(f'{r:,.0f}' for r in timing['steps_per_s'])}; built in {timing['build_s']} s)",
                  flush=True)
    for task in DYNAMICS_TASKS:
        results['dynamics'][task] = dynamics_gap(task)
        print(task, results['dynamics'][task], flush=True)
    results['atari'] = atari_gap()
    print('Pong', results['atari'], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'results.json').write_text(json.dumps(results, indent=2) + '\n')
    (args.out / 'table.md').write_text(report(results))
    plot(results, args.out / 'speed.png')
    print(f'\nwrote {display_path(args.out)}/results.json, table.md, speed.png')


if __name__ == '__main__':
    sys.exit(main())
