"""One acting step of S seeds: the seeds' own forwards, a `torch.func.vmap` of one seed's forward over the stacked
weights, and the twin of the model that a seed group acts with (`tidal.worker.seed_acting.SeedActor`).

The collect forward of `cartpole_ppo` (64x64, 8 envs per seed) and of `pendulum_sac` (256x256, 1 env per seed),
each seed's noise drawn beforehand, one torch thread; microseconds per step of all seeds.

    python benchmarks/seed_acting_speed.py [--seeds 1 8 32] [--repeats 2000]
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.func import functional_call, vmap

from tidal.entry.setup import load_config
from tidal.worker.builders import build_policy, set_seed
from tidal.worker.seed_acting import SeedActor, stack_seeds
from tidal.worker.seed_stack import SeedStack

OUT = Path(__file__).resolve().parent / 'results' / 'seed_acting_speed.json'
CASES = {'cartpole_ppo': (4, 8), 'pendulum_sac': (3, 1)}  # obs dim, envs per seed


def microseconds(fn, repeats: int) -> float:
    for _ in range(max(10, repeats // 10)):
        fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e6


def measure(config: str, seeds: int, repeats: int) -> dict:
    cfg = load_config(config)
    policies = []
    for seed in range(seeds):
        set_seed(seed)
        policies.append(build_policy(cfg))
    stack = SeedStack(policies)
    steps = [policy.collect_mode.steps for policy in policies]
    actor = SeedActor(stack, steps, 'collect')
    dim, envs = CASES[config]
    obs = [torch.randn(envs, dim) for _ in range(seeds)]
    inputs = [step.prepare(o) for step, o in zip(steps, obs)]
    noises = [step.draw(x, None) for step, x in zip(steps, inputs)]
    act, model = steps[0].act, steps[0].model

    class Holder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x, noise):  # noqa: ANN001
            return act(self.model, x, noise)
    holder = Holder()
    tensors = {f'model.{key}': stack.tensors[f'model.{key}']
               for key, _ in [*model.named_parameters(), *model.named_buffers()] if f'model.{key}' in stack.tensors}
    stacked_inputs, stacked_noises = stack_seeds(inputs), stack_seeds(noises)
    if isinstance(stacked_inputs, tuple):  # PPO's (observation, action mask): no mask here, which vmap cannot take
        observation = stacked_inputs[0]
        stacked_inputs = observation
        forward = lambda t, x, noise: functional_call(holder, t, ((x, None), noise))  # noqa: E731
    else:
        forward = lambda t, x, noise: functional_call(holder, t, (x, noise))  # noqa: E731
    batched = vmap(forward, randomness='error')
    with torch.no_grad():
        own = microseconds(lambda: [step.act(step.model, x, n) for step, x, n in zip(steps, inputs, noises)], repeats)
        vmapped = microseconds(lambda: batched(tensors, stacked_inputs, stacked_noises), repeats)
        twin = microseconds(lambda: actor.act(inputs, noises), repeats)
    assert actor.why_per_seed is None
    return {'config': config, 'seeds': seeds, 'own_us': own, 'vmap_us': vmapped, 'twin_us': twin}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 8, 32])
    parser.add_argument('--repeats', type=int, default=2000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = [measure(config, seeds, args.repeats) for config in CASES for seeds in args.seeds]
    OUT.write_text(json.dumps(rows, indent=2) + '\n')
    print('| config | seeds | S own forwards (us) | vmap of one seed\'s forward (us) | the twin (us) | twin gain |')
    print('|---|---|---|---|---|---|')
    for row in rows:
        print(f"| {row['config']} | {row['seeds']} | {row['own_us']:.0f} | {row['vmap_us']:.0f} | {row['twin_us']:.0f} "
              f"| {row['own_us'] / row['twin_us']:.1f}x |")


if __name__ == '__main__':
    sys.exit(main())
