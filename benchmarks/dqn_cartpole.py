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
from dataclasses import dataclass
from pathlib import Path

from common import (BENCH_DIR, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv, read_run,
                    run_pairs_then_rest, shown_command, tidal_train_command)
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


@dataclass(frozen=True)
class Task:
    """One env's DQN comparison: tidal's config and the overrides of each tidal arm, SB3's env id."""
    name: str
    env_id: str
    tidal_config: str
    matched: list[str]
    full: list[str]
    eval_every: int
    eval_episodes: int
    solved: float | None


CARTPOLE = Task('dqn_cartpole', 'CartPole-v1', TIDAL_CONFIG, MATCHED, FULL, EVAL_EVERY, EVAL_EPISODES, SOLVED)


def jobs_of(task: Task, args: argparse.Namespace, sb3_python: Path) -> dict[int, dict[str, Job]]:
    """Each seed's three arms: tidal matched to SB3, SB3, tidal's full DQN."""
    runs = args.out / 'runs'
    found = {}
    for seed in args.seeds:
        dirs = {arm: runs / f'{arm}_seed{seed}' for arm in ARMS}
        sb3 = [str(sb3_python), display_path(BENCH_DIR / 'sb3_dqn_runner.py'), '--env-id', task.env_id,
               '--seed', str(seed), '--steps', str(args.steps), '--run-dir', display_path(dirs['sb3']),
               '--eval-every', str(task.eval_every), '--eval-episodes', str(task.eval_episodes)]
        found[seed] = {
            'tidal': Job(f'tidal seed {seed}', tidal_train_command(task.tidal_config, seed, args.steps,
                                                                   dirs['tidal'], task.matched), dirs['tidal']),
            'sb3': Job(f'SB3 seed {seed}', sb3, dirs['sb3']),
            'full': Job(f'full seed {seed}', tidal_train_command(task.tidal_config, seed, args.steps, dirs['full'],
                                                                 task.full), dirs['full'])}
    return found


def report(task: Task, args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    runs = {arm: [read_run(jobs[seed][arm].run_dir) for seed in args.seeds] for arm in ARMS}
    results = {'benchmark': task.name, 'seeds': args.seeds, 'matched_overrides': task.matched,
               'full_overrides': task.full, 'versions': versions([jobs[seed]['sb3'].run_dir for seed in args.seeds]),
               'commands': {arm: shown_command(jobs[args.seeds[0]][arm].cmd, 1) for arm in ARMS}}
    return arms_report(args.out, f'DQN on {task.env_id}: tidal vs Stable-Baselines3', ARMS, runs, args.steps,
                       results, solved=task.solved)


def run_task(task: Task, default_steps: int, argv: list[str] | None, doc: str) -> None:
    """The command line shared by the DQN benchmarks: run the arms (or only report them) and print the report."""
    args = benchmark_args(benchmark_parser(doc, default_steps, 10_000), argv, task.name)
    jobs = jobs_of(task, args, ensure_sb3_venv())
    if not args.report_only:
        run_pairs_then_rest(jobs, ('tidal', 'sb3'), rest='full')
    print(report(task, args, jobs))


def main(argv: list[str] | None = None) -> None:
    run_task(CARTPOLE, 200_000, argv, __doc__)


if __name__ == '__main__':
    sys.exit(main())
