"""Stable-Baselines3 DQN for `dqn_cartpole.py` (rl-baselines3-zoo's CartPole-v1 hyperparameters, its
`hyperparams/dqn.yml`) and `dqn_minatar.py` (the zoo's Atari DQN schedule scaled to 300k env steps, on MinAtar's
own DQN network).

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the same run folder
as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function. Evaluation is the greedy policy
on a separate env, before learning and every `--eval-every` env steps; its time counts in the wall time, as it
does on tidal's side.
"""
import argparse
from pathlib import Path

import gymnasium as gym
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_sac_runner import learn_and_record  # the periodic greedy evaluation and the run record

# rl-baselines3-zoo, hyperparams/dqn.yml, CartPole-v1 (as it stands since December 2020; read at zoo v2.8.0)
ZOO_CARTPOLE = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
                    target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                    exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[256, 256]))
# rl-baselines3-zoo, hyperparams/dqn.yml, atari (lr 1e-4, batch 32, buffer 100k, target every 1000 env steps, one
# update every 4, epsilon to 0.01 over the first 10%), with learning_starts 5000 instead of the 100k of a 10M run
ZOO_ATARI_FOR_MINATAR = dict(learning_rate=1e-4, batch_size=32, buffer_size=100_000, learning_starts=5000,
                             gamma=0.99, target_update_interval=1000, train_freq=4, gradient_steps=1,
                             exploration_fraction=0.1, exploration_final_eps=0.01, max_grad_norm=10)


class MinAtarNet(BaseFeaturesExtractor):
    """MinAtar's DQN network up to its last hidden layer: 16 3x3 filters (stride 1, no padding), 128 units."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, features_dim=128)
        height, width, channels = observation_space.shape
        self.net = nn.Sequential(nn.Conv2d(channels, 16, 3, 1), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(16 * (height - 2) * (width - 2), 128), nn.ReLU())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.float().permute(0, 3, 1, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-id', default='CartPole-v1')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=50_000)
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=5000)
    parser.add_argument('--eval-episodes', type=int, default=10)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.env_id.startswith('MinAtar/'):
        import minatar.gym
        minatar.gym.register_envs()
        settings = ZOO_ATARI_FOR_MINATAR
        # the Q-network is the extractor then one linear layer to the actions (net_arch [])
        kwargs = dict(policy_kwargs=dict(features_extractor_class=MinAtarNet, net_arch=[]))
    else:
        settings, kwargs = ZOO_CARTPOLE, {}
    model = DQN('MlpPolicy', gym.make(args.env_id), seed=args.seed, device='cpu', verbose=0, **settings, **kwargs)
    learn_and_record(model, args, settings)


if __name__ == '__main__':
    main()
