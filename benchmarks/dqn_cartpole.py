"""DQN on CartPole-v1: tidal against Stable-Baselines3 side by side, and tidal's full DQN beside them.

SB3's DQN is the plain one (no double Q, no dueling head, one-step targets, uniform replay), so the matched arm
turns those off on tidal's side, and both take rl-baselines3-zoo's CartPole-v1 hyperparameters (`hyperparams/
dqn.yml`): one env, lr 2.5e-4, batch 512, buffer 100k, no warm-up, gamma 0.99, 4 updates every 16 env steps,
the target network copied every 5000 env steps (1250 updates on tidal's side, which counts updates), epsilon from
1 to 0.11 over the first 12k env steps (6% of 200k), Huber loss, gradient norm clipped at 10, [64, 64] ReLU.
The third arm is tidal's full DQN on the same settings: double Q, dueling head, 3-step returns, prioritized
replay with importance weights. For each seed tidal's matched arm and SB3 start together, one per core (their
wall-clock ratio); the full arms run after them, two at a time. Every arm runs its whole budget.

    python benchmarks/dqn_cartpole.py [--seeds 0 1 2] [--steps 200000] [--quick] [--report-only]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, display_path, ensure_sb3_venv, read_run, run_pairs_then_rest, shown_command,
                    tidal_train_command)
from report import arms_report
from sac_pendulum import versions

TIDAL_CONFIG = 'cartpole_dqn'
EVAL_EVERY, EVAL_EPISODES = 5000, 10
SOLVED = 475
MATCHED = [
    'env.collector_env_num=1', 'env.evaluator_env_num=1', f'env.n_evaluator_episode={EVAL_EPISODES}',
    'env.stop_value=null', 'policy.random_collect_size=0', 'policy.discount_factor=0.99', 'policy.nstep=1',
    'policy.model.encoder_hidden_size_list=[64,64]', 'policy.model.dueling=false',
    'policy.learn.learning_rate=2.5e-4', 'policy.learn.batch_size=512', 'policy.learn.update_per_collect=4',
    'policy.collect.n_sample=16', 'policy.learn.target_update_freq=1250', 'policy.learn.double_q=false',
    'policy.learn.loss=huber', 'policy.learn.grad_clip_norm=10', 'policy.other.eps.type=linear',
    'policy.other.eps.start=1.0', 'policy.other.eps.end=0.11', 'policy.other.eps.decay=12000',
    'policy.other.replay_buffer.replay_buffer_size=100000',
    'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={EVAL_EVERY}',
]
FULL = [*MATCHED, 'policy.learn.double_q=true', 'policy.model.dueling=true', 'policy.nstep=3', 'policy.priority=true',
        'policy.priority_IS_weight=true']
ARMS = {'tidal': 'tidal DQN (SB3 zoo settings)', 'sb3': 'Stable-Baselines3 DQN',
        'full': 'tidal DQN + double Q, dueling, 3-step, PER'}


def jobs_of(args: argparse.Namespace, sb3_python: Path) -> dict[int, dict[str, Job]]:
    runs = args.out / 'runs'
    found = {}
    for seed in args.seeds:
        dirs = {arm: runs / f'{arm}_seed{seed}' for arm in ARMS}
        sb3 = [str(sb3_python), display_path(BENCH_DIR / 'sb3_dqn_runner.py'), '--seed', str(seed), '--steps',
               str(args.steps), '--run-dir', display_path(dirs['sb3']), '--eval-every', str(EVAL_EVERY),
               '--eval-episodes', str(EVAL_EPISODES)]
        found[seed] = {
            'tidal': Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, dirs['tidal'],
                                                                   MATCHED), dirs['tidal']),
            'sb3': Job(f'SB3 seed {seed}', sb3, dirs['sb3']),
            'full': Job(f'full seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, dirs['full'], FULL),
                        dirs['full'])}
    return found


def report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    runs = {arm: [read_run(jobs[seed][arm].run_dir) for seed in args.seeds] for arm in ARMS}
    results = {'benchmark': 'dqn_cartpole', 'seeds': args.seeds, 'matched_overrides': MATCHED, 'full_overrides': FULL,
               'versions': versions([jobs[seed]['sb3'].run_dir for seed in args.seeds]),
               'commands': {arm: shown_command(jobs[args.seeds[0]][arm].cmd, 1) for arm in ARMS}}
    return arms_report(args.out, 'DQN on CartPole-v1: tidal vs Stable-Baselines3', ARMS, runs, args.steps, results,
                       solved=SOLVED)



def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=200_000)
    parser.add_argument('--out', type=Path, default=None)
    parser.add_argument('--quick', action='store_true', help='smoke test: 10k steps, first seed only')
    parser.add_argument('--report-only', action='store_true')
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = 10_000, args.seeds[:1]
    args.out = args.out or BENCH_DIR / 'results' / ('dqn_cartpole_quick' if args.quick else 'dqn_cartpole')
    jobs = jobs_of(args, ensure_sb3_venv())
    if not args.report_only:
        run_pairs_then_rest(jobs, ('tidal', 'sb3'), rest='full')
    print(report(args, jobs))


if __name__ == '__main__':
    sys.exit(main())
