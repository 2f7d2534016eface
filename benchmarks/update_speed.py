"""Gradient updates per second of one SAC update (batch 256, 256x256 networks, Pendulum shapes).

Measures the minimal plain-PyTorch update beside tidal's and the levers tried on tidal's, each on the
same fixed batch, one after another in one process:

    python benchmarks/update_speed.py [--threads 1] [--updates 300]

Subnormal floats only appear after thousands of real updates, so their effect (see
`policy flush_denormal`) is measured end to end by `sac_speed.py`, not here.
"""
import argparse
import time
from typing import Callable

import torch

from sac_minimal import MinimalSAC
from tidal.policies import SACPolicy

BATCH, OBS_DIM, ACT_DIM = 256, 3, 1


def fixed_batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return dict(obs=torch.randn(BATCH, OBS_DIM, generator=g), action=torch.rand(BATCH, ACT_DIM, generator=g) * 2 - 1,
                reward=torch.randn(BATCH, generator=g), next_obs=torch.randn(BATCH, OBS_DIM, generator=g),
                terminated=torch.zeros(BATCH, dtype=torch.bool))


def tidal_sac() -> SACPolicy:
    cfg = SACPolicy.default_config()
    cfg.model.update(obs_shape=OBS_DIM, action_shape=ACT_DIM)
    return SACPolicy(cfg)


def rate(update: Callable[[], None], n: int) -> float:
    for _ in range(max(10, n // 10)):
        update()
    start = time.perf_counter()
    for _ in range(n):
        update()
    return n / (time.perf_counter() - start)


def variants(batch: dict[str, torch.Tensor]) -> dict[str, Callable[[], None]]:
    minimal = MinimalSAC(OBS_DIM, ACT_DIM)
    minimal_args = (batch['obs'], batch['action'], batch['reward'], batch['next_obs'], batch['terminated'].float())

    default = tidal_sac()

    foreach = tidal_sac()  # Adam's multi-tensor path instead of the fused kernel
    for name in ('_optimizer_q', '_optimizer_policy'):
        old = getattr(foreach, name)
        setattr(foreach, name, torch.optim.Adam(old.param_groups[0]['params'], lr=3e-4, foreach=True))

    bf16 = tidal_sac()

    def bf16_update() -> None:
        with torch.autocast('cpu', dtype=torch.bfloat16):
            bf16.learn_mode.forward(batch)

    compiled = tidal_sac()
    compiled.model.actor_body = torch.compile(compiled.model.actor_body)
    compiled.model.critic.q = torch.compile(compiled.model.critic.q)

    return {
        'minimal plain PyTorch (two critic modules, Adam defaults)': lambda: minimal.update(*minimal_args),
        'tidal default (ensemble critics, fused Adam, no critic grads in actor step)':
            lambda: default.learn_mode.forward(batch),
        'tidal with foreach Adam instead of fused': lambda: foreach.learn_mode.forward(batch),
        'tidal under bf16 autocast': bf16_update,
        'tidal with torch.compile on actor body and critics': lambda: compiled.learn_mode.forward(batch),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--updates', type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    batch = fixed_batch()
    print(f'torch {torch.__version__}, {args.threads} thread(s), {args.updates} updates per variant')
    print('| variant | updates/s |\n|---|---|')
    for name, update in variants(batch).items():
        print(f'| {name} | {rate(update, args.updates):.1f} |')


if __name__ == '__main__':
    main()
