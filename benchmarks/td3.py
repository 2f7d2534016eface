"""TD3 on Pendulum-v1 and Hopper-v5: tidal against Stable-Baselines3 side by side.

Both sides take rl-baselines3-zoo's TD3 hyperparameters (`hyperparams/td3.yml`; tidal's zoo configs `pendulum_td3`
and `hopper_td3`): [400, 300] ReLU networks, lr 1e-3, 10k uniform random warm-up steps, Gaussian exploration noise
0.1, target policy smoothing 0.2 clipped at 0.5, an actor step every second critic step. Pendulum: gamma 0.98, a
200k replay and after each 200-step episode as many updates as it had steps, 20k env steps (the zoo's budget);
Hopper: gamma 0.99, batch 256, one update per env step, 60k env steps (SAC's Hopper budget). The one difference
left: SB3 moves its target networks with each actor step, tidal (as DI-engine) after every critic step. For each
seed tidal and SB3 start together, one per core (their wall-clock ratio); the seeds and envs run one after another.

    python benchmarks/td3.py [--envs pendulum hopper] [--seeds 0 1 2] [--quick] [--report-only]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv, read_run,
                    run_pairs_then_rest, shown_command, tidal_train_command)
from report import arms_report
from sac_pendulum import versions

#: env -> (gymnasium id, tidal zoo config, env steps, eval every (env steps), eval episodes)
ENVS = {'pendulum': ('Pendulum-v1', 'pendulum_td3', 20_000, 2000, 10),
        'hopper': ('Hopper-v5', 'hopper_td3', 60_000, 5000, 5)}
LIBRARIES = {'tidal': 'tidal TD3', 'sb3': 'Stable-Baselines3 TD3'}


def overrides(eval_every: int, episodes: int) -> list[str]:
    """tidal's evaluation on SB3's clock: every `eval_every` env steps, `episodes` episodes on one env."""
    return ['env.evaluator_env_num=1', f'env.n_evaluator_episode={episodes}', 'env.stop_value=null',
            'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={eval_every}']


def jobs_of(env: str, args: argparse.Namespace, sb3_python: Path) -> dict[int, dict[str, Job]]:
    env_id, config, steps, every, episodes = ENVS[env]
    steps = args.steps or steps
    runs = args.out / env / 'runs'
    found = {}
    for seed in args.seeds:
        dirs = {side: runs / f'{side}_seed{seed}' for side in LIBRARIES}
        sb3 = [str(sb3_python), display_path(BENCH_DIR / 'sb3_td3_runner.py'), '--env-id', env_id, '--seed', str(seed),
               '--steps', str(steps), '--run-dir', display_path(dirs['sb3']), '--eval-every', str(every),
               '--eval-episodes', str(episodes)]
        found[seed] = {'tidal': Job(f'{env} tidal seed {seed}',
                                    tidal_train_command(config, seed, steps, dirs['tidal'], overrides(every, episodes)),
                                    dirs['tidal']),
                       'sb3': Job(f'{env} SB3 seed {seed}', sb3, dirs['sb3'])}
    return found


def report(env: str, args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    env_id, _, steps, _, _ = ENVS[env]
    runs = {side: [read_run(jobs[seed][side].run_dir) for seed in args.seeds] for side in LIBRARIES}
    results = {'benchmark': f'td3_{env}', 'env_id': env_id, 'seeds': args.seeds,
               'versions': versions([jobs[seed]['sb3'].run_dir for seed in args.seeds]),
               'commands': {side: shown_command(jobs[args.seeds[0]][side].cmd, 1) for side in LIBRARIES}}
    return arms_report(args.out / env, f'TD3 on {env_id}: tidal vs Stable-Baselines3', LIBRARIES, runs,
                       args.steps or steps, results)



def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, None, 11_000)  # no --steps: each env's own budget
    parser.add_argument('--envs', nargs='+', choices=sorted(ENVS), default=['pendulum', 'hopper'])
    args = benchmark_args(parser, argv, 'td3')
    sb3_python = ensure_sb3_venv()
    for env in args.envs:
        jobs = jobs_of(env, args, sb3_python)
        if not args.report_only:
            run_pairs_then_rest(jobs, ('tidal', 'sb3'), label=f'{env} ')
        print(report(env, args, jobs))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
