"""Stable-Baselines3-contrib CrossQ with the settings of tidal's CrossQ benchmark (Pendulum-v1, Hopper-v5).

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`, which holds sb3-contrib), never in tidal's, and
writes the same run folder as `tidal train`, through the SAC runner's evaluation and record.
"""
import argparse

import gymnasium as gym
import torch
from sb3_contrib import CrossQ

from sb3_sac_runner import learn_and_record, runner_parser


def parse_args() -> argparse.Namespace:
    parser = runner_parser(__doc__.splitlines()[0])
    parser.add_argument('--policy-delay', type=int, default=3, help='critic steps per actor step')
    parser.add_argument('--critic-width', type=int, default=1024, help='units of each of the two critic layers')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    # sb3-contrib's defaults otherwise (lr 1e-3, Adam betas (0.5, 0.999), batch 256, automatic entropy from 1,
    # BatchRenorm momentum 0.01, eps 0.001, 100k warm-up steps)
    settings = dict(learning_starts=args.learning_starts, policy_delay=args.policy_delay, buffer_size=1_000_000,
                    batch_size=256, gamma=0.99, learning_rate=1e-3,
                    policy_kwargs=dict(net_arch=dict(pi=[256, 256], qf=[args.critic_width] * 2)))
    model = CrossQ('MlpPolicy', gym.make(args.env_id), seed=args.seed, device=args.device, verbose=0, **settings)
    learn_and_record(model, args, settings)


if __name__ == '__main__':
    main()
