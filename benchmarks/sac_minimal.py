"""A minimal single-file SAC in plain PyTorch: the floor for framework overhead.

Same networks and settings as the Pendulum comparison (256x256 MLPs, batch 256, lr 3e-4, one update
per env step after 100 random steps, auto temperature with target entropy -action_dim, Polyak 0.005,
evaluation of 5 deterministic episodes every 1000 env steps). No framework, no logging beyond the
run folder (`evals.csv`, `summary.json`) that the benchmark scripts read.

    python benchmarks/sac_minimal.py --seed 0 --steps 20000 --run-dir RUN_DIR [--threads 1]
"""
import argparse
import math
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import EvalLog, write_summary

ENV_ID = 'Pendulum-v1'
EVAL_SEED_OFFSET = 10_000
HIDDEN, BATCH, LR, GAMMA, TAU, WARMUP = 256, 256, 3e-4, 0.99, 0.005, 100


def net(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, outputs))


class Actor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.body = net(obs_dim, 2 * act_dim)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self.body(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(-20, 2)
        if deterministic:
            return torch.tanh(mu), torch.zeros(())
        u = mu + log_std.exp() * torch.randn_like(mu)
        log_prob = (-0.5 * ((u - mu) / log_std.exp()).pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        log_prob = log_prob - (2 * (math.log(2) - u - F.softplus(-2 * u))).sum(-1)
        return torch.tanh(u), log_prob


def evaluate(actor: Actor, env: gym.Env, episodes: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    returns, lengths = np.zeros(episodes), np.zeros(episodes)
    for i in range(episodes):
        obs, _ = env.reset()
        done = False
        while not done:
            with torch.no_grad():
                action = actor(torch.as_tensor(obs)[None], deterministic=True)[0][0].numpy()
            obs, reward, terminated, truncated, _ = env.step(action * scale)
            returns[i] += reward
            lengths[i] += 1
            done = terminated or truncated
    return returns, lengths


class MinimalSAC:
    """Actor, twin critics with targets, temperature and their optimizers: the whole algorithm."""

    def __init__(self, obs_dim: int, act_dim: int) -> None:
        self.actor = Actor(obs_dim, act_dim)
        self.q1, self.q2 = net(obs_dim + act_dim, 1), net(obs_dim + act_dim, 1)
        self.q1_target, self.q2_target = net(obs_dim + act_dim, 1), net(obs_dim + act_dim, 1)
        self.q1_target.load_state_dict(self.q1.state_dict())
        self.q2_target.load_state_dict(self.q2.state_dict())
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.q_optim = torch.optim.Adam([*self.q1.parameters(), *self.q2.parameters()], lr=LR)
        self.actor_optim = torch.optim.Adam(self.actor.parameters(), lr=LR)
        self.alpha_optim = torch.optim.Adam([self.log_alpha], lr=LR)
        self.target_entropy = -float(act_dim)

    def update(self, o: torch.Tensor, a: torch.Tensor, r: torch.Tensor, o2: torch.Tensor, d: torch.Tensor) -> None:
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = self.actor(o2)
            oa2 = torch.cat([o2, a2], -1)
            next_q = torch.min(self.q1_target(oa2), self.q2_target(oa2)).squeeze(-1)
            target = r + GAMMA * (1 - d) * (next_q - alpha * logp2)
        oa = torch.cat([o, a], -1)
        q_loss = F.mse_loss(self.q1(oa).squeeze(-1), target) + F.mse_loss(self.q2(oa).squeeze(-1), target)
        self.q_optim.zero_grad()
        q_loss.backward()
        self.q_optim.step()

        new_a, logp = self.actor(o)
        oa_new = torch.cat([o, new_a], -1)
        actor_loss = (alpha * logp - torch.min(self.q1(oa_new), self.q2(oa_new)).squeeze(-1)).mean()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()

        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_optim.zero_grad()
        alpha_loss.backward()
        self.alpha_optim.step()

        with torch.no_grad():
            for online, target_net in ((self.q1, self.q1_target), (self.q2, self.q2_target)):
                for p, tp in zip(online.parameters(), target_net.parameters()):
                    tp.mul_(1 - TAU).add_(p, alpha=TAU)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=20_000)
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=1000)
    parser.add_argument('--eval-episodes', type=int, default=5)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--flush-denormal', action='store_true', help='flush subnormal floats to zero')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(args.flush_denormal)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    env, eval_env = gym.make(ENV_ID), gym.make(ENV_ID)
    eval_env.reset(seed=args.seed + EVAL_SEED_OFFSET)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    scale = float(env.action_space.high[0])
    sac = MinimalSAC(obs_dim, act_dim)

    size = args.steps
    buf_obs, buf_next = np.zeros((size, obs_dim), np.float32), np.zeros((size, obs_dim), np.float32)
    buf_act, buf_rew = np.zeros((size, act_dim), np.float32), np.zeros(size, np.float32)
    buf_term = np.zeros(size, np.float32)

    log = EvalLog(args.run_dir)
    start = time.perf_counter()
    updates = 0
    obs, _ = env.reset(seed=args.seed)
    for step in range(args.steps):
        if step % args.eval_every == 0:
            returns, lengths = evaluate(sac.actor, eval_env, args.eval_episodes, scale)
            log.write(step, updates, time.perf_counter() - start, float(returns.mean()), float(returns.std()),
                      float(lengths.mean()))
        if step < WARMUP:
            action = np.random.uniform(-1, 1, act_dim).astype(np.float32)
        else:
            with torch.no_grad():
                action = sac.actor(torch.as_tensor(obs)[None])[0][0].numpy()
        next_obs, reward, terminated, truncated, _ = env.step(action * scale)
        buf_obs[step], buf_act[step], buf_rew[step] = obs, action, reward
        buf_next[step], buf_term[step] = next_obs, float(terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
        if step + 1 < WARMUP:
            continue
        idx = np.random.randint(0, step + 1, BATCH)
        sac.update(torch.from_numpy(buf_obs[idx]), torch.from_numpy(buf_act[idx]), torch.from_numpy(buf_rew[idx]),
                   torch.from_numpy(buf_next[idx]), torch.from_numpy(buf_term[idx]))
        updates += 1

    returns, lengths = evaluate(sac.actor, eval_env, args.eval_episodes, scale)
    log.write(args.steps, updates, time.perf_counter() - start, float(returns.mean()), float(returns.std()),
              float(lengths.mean()))
    wall_time = time.perf_counter() - start
    log.close()
    write_summary(args.run_dir, args.steps, updates, wall_time)


if __name__ == '__main__':
    main()
