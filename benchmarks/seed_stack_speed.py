"""How fast S seeds of one SAC update run together, by the three ways of giving models a seed dimension.

A design measurement for training several seeds in one process: one SAC-shaped update (a tanh-Gaussian
actor, twin critics and their Polyak targets, one Adam step over all of them) for S independent seeds,
done as
- `loop`: S separate sets of `nn.Linear` modules, updated one after another (what S processes do, less
  the processes);
- `bmm`: the weights stacked along a leading seed dimension, every layer one batched matmul
  (`torch.baddbmm`) over [S, batch, features];
- `vmap`: S ordinary modules whose parameters `torch.func.stack_module_state` stacks, the forward
  mapped over them with `torch.func.vmap` and `functional_call`.
Every variant takes one Adam step on all parameters (Adam is elementwise, so one optimizer over stacked
tensors is S independent optimizers). Throughput gain = S x time(loop, 1 seed) / time(variant, S seeds).

    python benchmarks/seed_stack_speed.py [--device cpu|cuda] [--seeds 1 8] [--threads 1] [--json FILE]
"""
import argparse
import copy
import json
import platform
import time

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap

SHAPES = {'64x64, batch 64': (64, 64), '256x256, batch 256': (256, 256)}
OBS_DIM, ACT_DIM = 17, 6  # a MuJoCo locomotion task's sizes (HalfCheetah)
GAMMA, TAU = 0.99, 0.005


def mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class StackedMLP(nn.Module):
    """An MLP whose every weight has a leading seed dimension; input and output are [S, batch, features]."""

    def __init__(self, seeds: int, sizes: list[int]) -> None:
        super().__init__()
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = fan_in ** -0.5
            self.weights.append(nn.Parameter(torch.empty(seeds, fan_in, fan_out).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(seeds, 1, fan_out).uniform_(-bound, bound)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(bias, x, weight)
            if i < last:
                x = torch.relu(x)
        return x


class SACNets(nn.Module):
    """Actor, twin critics and target critics, built by `make(sizes)` (plain or stacked MLPs)."""

    def __init__(self, make, hidden: int) -> None:
        super().__init__()
        self.actor = make([OBS_DIM, hidden, hidden, 2 * ACT_DIM])
        self.critics = nn.ModuleList(make([OBS_DIM + ACT_DIM, hidden, hidden, 1]) for _ in range(2))
        self.targets = copy.deepcopy(self.critics).requires_grad_(False)


def sac_loss(actor, critics, targets, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Critic TD loss plus actor loss of SAC with a fixed temperature; works on any leading dimensions."""
    def act(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = actor(obs).chunk(2, dim=-1)
        std = log_std.clamp(-20, 2).exp()
        pre = mean + std * torch.randn_like(mean)
        log_prob = (-0.5 * ((pre - mean) / std) ** 2 - std.log()).sum(-1, keepdim=True)
        action = torch.tanh(pre)
        return action, log_prob - torch.log1p(-action.pow(2) + 1e-6).sum(-1, keepdim=True)

    obs, action, reward, next_obs = batch['obs'], batch['action'], batch['reward'], batch['next_obs']
    with torch.no_grad():
        next_action, next_log_prob = act(next_obs)
        next_in = torch.cat([next_obs, next_action], -1)
        target_q = torch.min(targets[0](next_in), targets[1](next_in)) - 0.2 * next_log_prob
        td_target = reward + GAMMA * target_q
    q_in = torch.cat([obs, action], -1)
    critic_loss = sum(((critic(q_in) - td_target) ** 2).mean() for critic in critics)
    new_action, log_prob = act(obs)
    pi_in = torch.cat([obs, new_action], -1)
    actor_loss = (0.2 * log_prob - torch.min(critics[0](pi_in), critics[1](pi_in))).mean()
    return critic_loss + actor_loss


def make_batch(lead: tuple[int, ...], batch: int, device: torch.device) -> dict[str, torch.Tensor]:
    shape = (*lead, batch)
    return {'obs': torch.randn(*shape, OBS_DIM, device=device),
            'action': torch.rand(*shape, ACT_DIM, device=device) * 2 - 1,
            'reward': torch.randn(*shape, 1, device=device),
            'next_obs': torch.randn(*shape, OBS_DIM, device=device)}


def polyak(online: list[torch.Tensor], target: list[torch.Tensor]) -> None:
    with torch.no_grad():
        torch._foreach_lerp_(target, online, TAU)


def loop_update(seeds: int, hidden: int, batch: int, device: torch.device):
    nets = [SACNets(mlp, hidden).to(device) for _ in range(seeds)]
    optims = [torch.optim.Adam(n.parameters(), lr=3e-4) for n in nets]
    batches = [make_batch((), batch, device) for _ in range(seeds)]

    def step() -> None:
        for net, optim, data in zip(nets, optims, batches):
            loss = sac_loss(net.actor, net.critics, net.targets, data)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            polyak(list(net.critics.parameters()), list(net.targets.parameters()))
    return step


def bmm_update(seeds: int, hidden: int, batch: int, device: torch.device):
    net = SACNets(lambda sizes: StackedMLP(seeds, sizes), hidden).to(device)
    optim = torch.optim.Adam(net.parameters(), lr=3e-4)
    data = make_batch((seeds,), batch, device)

    def step() -> None:
        # the mean over seeds scales each seed's gradient by 1/S; the sum keeps it, as S separate updates have it
        loss = sac_loss(net.actor, net.critics, net.targets, data) * seeds
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        polyak(list(net.critics.parameters()), list(net.targets.parameters()))
    return step


def vmap_update(seeds: int, hidden: int, batch: int, device: torch.device):
    nets = [SACNets(mlp, hidden).to(device) for _ in range(seeds)]
    params, buffers = stack_module_state(nets)  # leaves with requires_grad, stacked over seeds
    online = [p for name, p in params.items() if not name.startswith('targets.')]
    targets = [p for name, p in params.items() if name.startswith('targets.')]
    for tensor in targets:
        tensor.requires_grad_(False)
    optim = torch.optim.Adam(online, lr=3e-4)
    base = copy.deepcopy(nets[0]).to('meta')
    data = make_batch((seeds,), batch, device)

    def one_seed(p: dict, b: dict, sample: dict) -> torch.Tensor:
        def call(prefix: str):
            module, sub = getattr_path(base, prefix), _sub(p, prefix)
            return lambda x: functional_call(module, sub, (x,))
        return sac_loss(call('actor'), [call('critics.0'), call('critics.1')],
                        [call('targets.0'), call('targets.1')], sample)

    def step() -> None:
        loss = vmap(one_seed, randomness='different')(params, buffers, data).sum()
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
        polyak([params[k] for k in params if k.startswith('critics.')],
               [params[k] for k in params if k.startswith('targets.')])
    return step


def getattr_path(module: nn.Module, path: str) -> nn.Module:
    for part in path.split('.'):
        module = getattr(module, part) if not part.isdigit() else module[int(part)]
    return module


def _sub(params: dict, prefix: str) -> dict:
    return {name[len(prefix) + 1:]: value for name, value in params.items() if name.startswith(prefix + '.')}


VARIANTS = {'loop': loop_update, 'bmm': bmm_update, 'vmap': vmap_update}


def time_step(step, device: torch.device, min_s: float) -> float:
    """Median seconds per call over repeats of at least `min_s` each, after a warm-up."""
    sync = torch.cuda.synchronize if device.type == 'cuda' else (lambda: None)
    for _ in range(5):
        step()
    sync()
    times = []
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < min_s:
            step()
            calls += 1
            if calls % 10 == 0:
                sync()
        sync()
        times.append((time.perf_counter() - start) / calls)
    return sorted(times)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 8])
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--min-s', type=float, default=1.0, help='seconds per timed repeat')
    parser.add_argument('--json', help='also write the results to this file')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == 'cuda' else platform.processor() or 'cpu'
    print(f'device {name}, torch {torch.__version__}, {args.threads} thread(s)')
    results: dict = {'device': name, 'torch': torch.__version__, 'threads': args.threads, 'shapes': {}}
    for label, (hidden, batch) in SHAPES.items():
        base = time_step(loop_update(1, hidden, batch, device), device, args.min_s)
        rows = {}
        for seeds in args.seeds:
            for variant, build in VARIANTS.items():
                seconds = time_step(build(seeds, hidden, batch, device), device, args.min_s)
                rows[f'{variant} x{seeds}'] = {'ms': seconds * 1e3, 'gain': seeds * base / seconds}
                print(f'{label:>20} | {variant:>4} x{seeds:<3} | {seconds * 1e3:8.2f} ms/update | '
                      f'throughput {seeds * base / seconds:5.2f}x one seed alone', flush=True)
        results['shapes'][label] = rows
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(results, handle, indent=1)


if __name__ == '__main__':
    main()
