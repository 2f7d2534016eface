"""A2C on CartPole-v1: tidal against Stable-Baselines3 side by side, and tidal's zoo config beside them.

The matched arm takes SB3's A2C defaults, which rl-baselines3-zoo keeps for CartPole-v1 (`hyperparams/a2c.yml`:
8 envs, ent_coef 0): 8 envs of 5 steps per rollout and one update of the whole rollout, lr 7e-4, gamma 0.99, GAE
lambda 1 (the n-step returns of the paper), value weight 0.5, no entropy bonus, gradient norm clipped at 0.5, no
advantage normalisation, separate [64, 64] tanh networks with orthogonal init. SB3 steps RMSprop (alpha 0.99, eps
1e-5); tidal's A2C steps Adam, here with betas (0, 0.99) and eps 1e-5, which is RMSprop with its second moment
bias-corrected. The third arm is tidal's `cartpole_a2c` (DI-engine's settings, gamma 0.99). Each seed's matched pair
runs side by side, one per core (their wall-clock ratio); the zoo arms after them, two at a time. The budget is
200k env steps (the zoo trains 500k).

    python benchmarks/a2c_cartpole.py [--seeds 0 1 2] [--steps 200000] [--quick] [--report-only]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import (BENCH_DIR, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv, read_run,
                    run_pairs_then_rest, shown_command, tidal_train_command)
from report import arms_report
from sac_pendulum import versions

TIDAL_CONFIG = 'cartpole_a2c'
EVAL_EVERY, EVAL_EPISODES = 5000, 10
SOLVED = 475
EVAL = ['env.evaluator_env_num=1', f'env.n_evaluator_episode={EVAL_EPISODES}', 'env.stop_value=null',
        'policy.eval.evaluator.eval_freq=1000000000', f'policy.eval.evaluator.eval_freq_env_steps={EVAL_EVERY}']
MATCHED = [
    *EVAL, 'env.collector_env_num=8', 'policy.collect.n_sample=40', 'policy.learn.batch_size=40',
    'policy.learn.learning_rate=7e-4', 'policy.learn.betas=[0.0,0.99]', 'policy.learn.eps=1e-5',
    'policy.collect.discount_factor=0.99', 'policy.collect.gae_lambda=1.0', 'policy.learn.value_weight=0.5',
    'policy.learn.entropy_weight=0.0', 'policy.learn.grad_clip_norm=0.5', 'policy.learn.adv_norm=false',
    'policy.model.encoder_hidden_sizes=[64,64]', 'policy.model.activation=tanh', 'policy.model.share_encoder=false',
    'policy.model.orthogonal_init=true',
]
ARMS = {'tidal': 'tidal A2C (SB3 defaults)', 'sb3': 'Stable-Baselines3 A2C', 'zoo': f'tidal {TIDAL_CONFIG}'}


def jobs_of(args: argparse.Namespace, sb3_python: Path) -> dict[int, dict[str, Job]]:
    runs = args.out / 'runs'
    found = {}
    for seed in args.seeds:
        dirs = {arm: runs / f'{arm}_seed{seed}' for arm in ARMS}
        sb3 = [str(sb3_python), display_path(BENCH_DIR / 'sb3_ppo_runner.py'), '--algo', 'a2c', '--n-envs', '8',
               '--seed', str(seed), '--steps', str(args.steps), '--run-dir', display_path(dirs['sb3']),
               '--eval-every', str(EVAL_EVERY), '--eval-episodes', str(EVAL_EPISODES), '--eval-envs', '1']
        found[seed] = {
            'tidal': Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, dirs['tidal'],
                                                                   MATCHED), dirs['tidal']),
            'sb3': Job(f'SB3 seed {seed}', sb3, dirs['sb3']),
            'zoo': Job(f'zoo seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, dirs['zoo'], EVAL),
                       dirs['zoo'])}
    return found


def report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    runs = {arm: [read_run(jobs[seed][arm].run_dir) for seed in args.seeds] for arm in ARMS}
    results = {'benchmark': 'a2c_cartpole', 'seeds': args.seeds, 'matched_overrides': MATCHED,
               'versions': versions([jobs[seed]['sb3'].run_dir for seed in args.seeds]),
               'commands': {arm: shown_command(jobs[args.seeds[0]][arm].cmd, 1) for arm in ARMS}}
    return arms_report(args.out, 'A2C on CartPole-v1: tidal vs Stable-Baselines3', ARMS, runs, args.steps, results,
                       solved=SOLVED)



def main(argv: list[str] | None = None) -> None:
    args = benchmark_args(benchmark_parser(__doc__, 200_000, 10_000), argv, 'a2c_cartpole')
    jobs = jobs_of(args, ensure_sb3_venv())
    if not args.report_only:
        run_pairs_then_rest(jobs, ('tidal', 'sb3'), rest='zoo')
    print(report(args, jobs))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
