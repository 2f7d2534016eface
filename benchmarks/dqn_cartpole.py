"""DQN on CartPole-v1: tidal against Stable-Baselines3 side by side, and tidal's full DQN beside them.

SB3's DQN is the plain one (no double Q, no dueling head, one-step targets, uniform replay), so the matched arm
turns those off on tidal's side, and both take rl-baselines3-zoo's current CartPole-v1 hyperparameters
(`hyperparams/dqn.yml`, unchanged since December 2020; read at zoo v2.8.0): one env, lr 2.3e-3, batch 64, buffer
100k, 1000 random steps before learning, gamma 0.99, 128 updates after every 256 env steps, epsilon from 1 to 0.04
over the first 8k env steps (16% of the zoo's 50k), Huber loss, gradient norm clipped at 10, [256, 256] ReLU.
SB3 copies the target network every 10 env steps, which with updates in bursts of 128 after each 256 steps is a
copy before each burst: tidal, which counts updates, copies it after every 128th. The third arm is tidal's full
DQN on the same settings: double Q, dueling head, 3-step returns, prioritized replay with importance weights and
its default beta schedule. For each seed tidal's matched arm and SB3 start together, one per core (their
wall-clock ratio); the full arms run after them, two at a time. Every arm runs its whole budget, the zoo's 50k.

    python benchmarks/dqn_cartpole.py [--seeds 0 1 2] [--steps 50000] [--quick] [--report-only] [--arm full]

`--arm full` trains only the full arm, two runs at a time, and reads the other arms' runs from the results.json
already in --out (for a change that touches only that arm); `--arm full --report-only` reports the full arm's
runs as they stand in --out/runs (the seeds given).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from common import (BENCH_DIR, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv, read_run,
                    run_in_twos, run_pairs_then_rest, shown_command, tidal_train_command)
from report import arms_report
from sac_pendulum import versions

TIDAL_CONFIG = 'cartpole_dqn'
EVAL_EVERY, EVAL_EPISODES = 2500, 10
SOLVED = 475
MATCHED = [
    'env.collector_env_num=1', 'env.evaluator_env_num=1', f'env.n_evaluator_episode={EVAL_EPISODES}',
    'env.stop_value=null', 'policy.random_collect_size=1000', 'policy.discount_factor=0.99', 'policy.nstep=1',
    'policy.model.encoder_hidden_size_list=[256,256]', 'policy.model.dueling=false',
    'policy.learn.learning_rate=2.3e-3', 'policy.learn.batch_size=64', 'policy.learn.update_per_collect=128',
    'policy.collect.n_sample=256', 'policy.learn.target_update_freq=128', 'policy.learn.double_q=false',
    'policy.learn.loss=huber', 'policy.learn.grad_clip_norm=10', 'policy.other.eps.type=linear',
    'policy.other.eps.start=1.0', 'policy.other.eps.end=0.04', 'policy.other.eps.decay=8000',
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


def saved_results(out: Path) -> dict:
    """The last full report's results.json in `out`: the runs of the arms `--arm` does not rerun."""
    path = out / 'results.json'
    if not path.exists():
        raise SystemExit(f'{display_path(path)} is missing: run every arm once before rerunning one with --arm')
    return json.loads(path.read_text())


def report(task: Task, args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    saved = saved_results(args.out) if args.arm else None
    runs = {arm: [saved['runs'][arm][str(seed)] if saved and arm != args.arm else read_run(jobs[seed][arm].run_dir)
                  for seed in args.seeds] for arm in ARMS}
    sb3_versions = saved['versions'] if saved else versions([jobs[seed]['sb3'].run_dir for seed in args.seeds])
    results = {'rerun_arm': args.arm, 'benchmark': task.name, 'seeds': args.seeds, 'matched_overrides': task.matched,
               'full_overrides': task.full, 'versions': sb3_versions,
               'commands': {arm: shown_command(jobs[args.seeds[0]][arm].cmd, 1) for arm in ARMS}}
    return arms_report(args.out, f'DQN on {task.env_id}: tidal vs Stable-Baselines3', ARMS, runs, args.steps,
                       results, solved=task.solved)


def run_task(task: Task, default_steps: int, argv: list[str] | None, doc: str) -> None:
    """The command line shared by the DQN benchmarks: run the arms (or only report them) and print the report."""
    parser = benchmark_parser(doc, default_steps, 10_000)
    parser.add_argument('--arm', choices=['full'], default=None,
                        help="train only this arm; the others are read from --out's results.json")
    args = benchmark_args(parser, argv, task.name)
    jobs = jobs_of(task, args, ensure_sb3_venv())
    if args.report_only:
        pass
    elif args.arm is not None:  # two at a time, as the full arms run after the pairs
        run_in_twos(args.arm, [jobs[seed][args.arm] for seed in args.seeds])
    else:
        run_pairs_then_rest(jobs, ('tidal', 'sb3'), rest='full')
    print(report(task, args, jobs))


def main(argv: list[str] | None = None) -> None:
    run_task(CARTPOLE, 50_000, argv, __doc__)


if __name__ == '__main__':
    sys.exit(main())
