"""DQN on MinAtar Breakout: tidal against Stable-Baselines3 side by side, and tidal's full DQN beside them.

rl-baselines3-zoo has no MinAtar settings, so both sides take its Atari DQN schedule scaled to a 300k-step run
(lr 1e-4, batch 32, buffer 100k, one update every 4 env steps, the target copied every 1000 env steps, epsilon
from 1 to 0.01 over the first 30k, 5000 random steps before learning, Huber loss, gradient norm clipped at 10)
on MinAtar's own DQN network (16 3x3 filters, 128 units). The matched arm is zoo `minatar_breakout_dqn` with
double Q, the dueling head, n-step and prioritized replay turned off, as SB3's DQN has none of them; the full
arm is that zoo config as it stands. Each seed's matched pair trains side by side, one per core; the full arms
run after, two at a time. MinAtar is installed into both environments (without its plotting dependencies).

    python benchmarks/dqn_minatar.py [--seeds 0 1 2] [--steps 300000] [--quick] [--report-only]
"""
from __future__ import annotations

import subprocess
import sys

from common import ensure_sb3_venv
from dqn_cartpole import Task, run_task

MINATAR_PIN = 'minatar==1.0.15'
EVAL_EVERY, EVAL_EPISODES = 25_000, 10
FULL: list[str] = []  # the zoo config as it stands
MATCHED = ['policy.learn.double_q=false', 'policy.model.dueling=false', 'policy.nstep=1', 'policy.priority=false',
           'policy.priority_IS_weight=false']
BREAKOUT = Task('dqn_minatar', 'MinAtar/Breakout-v1', 'minatar_breakout_dqn', MATCHED, FULL, EVAL_EVERY,
                EVAL_EPISODES, None)


def ensure_minatar(python: str) -> None:
    """MinAtar in the environment of `python`; its plotting dependencies are not needed to train."""
    if subprocess.run([python, '-c', 'import minatar.gym'], capture_output=True).returncode != 0:
        subprocess.run([python, '-m', 'pip', 'install', '-q', '--no-deps', MINATAR_PIN], check=True)


def main(argv: list[str] | None = None) -> None:
    ensure_minatar(sys.executable)
    ensure_minatar(str(ensure_sb3_venv()))
    run_task(BREAKOUT, 300_000, argv, __doc__)


if __name__ == '__main__':
    sys.exit(main())
