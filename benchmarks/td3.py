"""TD3 on Pendulum-v1 and Hopper-v5: tidal against Stable-Baselines3 side by side.

Both sides take rl-baselines3-zoo's current TD3 hyperparameters (`hyperparams/td3.yml`, as they stand since
January 2024; read at zoo v2.8.0): [400, 300] ReLU networks, lr 1e-3, 10k uniform random warm-up steps, Gaussian
exploration noise 0.1, target policy smoothing 0.2 clipped at 0.5, an actor step every second critic step, batch
256, one update per env step. Pendulum: gamma 0.98, a 200k replay, 20k env steps (the zoo's budget); Hopper:
gamma 0.99, a 1M replay, 60k env steps (SAC's Hopper budget). tidal's side is its zoo config (`pendulum_td3`,
`hopper_td3`) with `MATCHED` and each env's overrides of `ENVS`: its targets move with the actor's steps, as SB3's
do (`learn.target_update=with_actor`; DI-engine's default moves them after every critic step), and Pendulum's
runs set one update per env step over `pendulum_td3`'s updates after each episode. For each seed tidal and SB3
start together, one per core (their wall-clock ratio); the seeds and envs run one after another, `--envs`
choosing which.

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

#: env -> (gymnasium id, tidal zoo config, env steps, eval every (env steps), eval episodes, tidal overrides)
ENVS = {'pendulum': ('Pendulum-v1', 'pendulum_td3', 20_000, 2000, 10,
                     ['policy.collect.n_sample=1', 'policy.learn.update_per_collect=1']),
        'hopper': ('Hopper-v5', 'hopper_td3', 60_000, 5000, 5, [])}
#: tidal's settings that SB3's TD3 has built in, on every env
MATCHED = ['policy.learn.target_update=with_actor']
LIBRARIES = {'tidal': 'tidal TD3', 'sb3': 'Stable-Baselines3 TD3'}


def overrides(eval_every: int, episodes: int) -> list[str]:
    """tidal's evaluation on SB3's clock: every `eval_every` env steps, `episodes` episodes on one env."""
    return ['env.evaluator_env_num=1', f'env.n_evaluator_episode={episodes}', 'env.stop_value=null',
            'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={eval_every}']


def jobs_of(env: str, args: argparse.Namespace, sb3_python: Path) -> dict[int, dict[str, Job]]:
    env_id, config, steps, every, episodes, settings = ENVS[env]
    steps = args.steps or steps
    runs = args.out / env / 'runs'
    found = {}
    for seed in args.seeds:
        dirs = {side: runs / f'{side}_seed{seed}' for side in LIBRARIES}
        sb3 = [str(sb3_python), display_path(BENCH_DIR / 'sb3_td3_runner.py'), '--env-id', env_id, '--seed', str(seed),
               '--steps', str(steps), '--run-dir', display_path(dirs['sb3']), '--eval-every', str(every),
               '--eval-episodes', str(episodes)]
        found[seed] = {'tidal': Job(f'{env} tidal seed {seed}',
                                    tidal_train_command(config, seed, steps, dirs['tidal'],
                                                        [*MATCHED, *settings, *overrides(every, episodes)]),
                                    dirs['tidal']),
                       'sb3': Job(f'{env} SB3 seed {seed}', sb3, dirs['sb3'])}
    return found


def report(env: str, args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    env_id, _, steps, _, _, _ = ENVS[env]
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
