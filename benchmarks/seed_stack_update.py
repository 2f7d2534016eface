"""One stacked update of S seeds (`SeedStack.update`, what `--seeds` runs) against the S updates made one by one.

The same policies, batches and noise on both sides, one torch thread unless `--threads`: `cartpole_ppo`'s PPO update (64x64
networks, minibatches of 128) and `pendulum_sac`'s SAC update (256x256, batches of 256), the learner part of
`benchmarks/seed_group.py`'s end-to-end comparison. Gain = time of the S separate updates / time of one stacked.

With `--widths`, both networks' hidden layers are set to each width in turn (two layers of it), and each row
also gives the update's size per seed, its model's parameters times its batch rows: where stacking stops paying
on this CPU, which `tidal.entry.group_shares.stacking_pays` takes as its bound.

    python benchmarks/seed_stack_update.py [--seeds 1 4 8] [--repeats 50] [--threads 1] [--widths 32 64 128 256]
"""
import argparse
import json
import time
from pathlib import Path
from typing import Optional

import torch

from tidal.entry.setup import load_config
from tidal.worker.builders import build_policy, set_seed
from tidal.worker.seed_stack import SeedStack

OUT = Path(__file__).resolve().parent / 'results' / 'seed_stack_update.json'


def ppo_batch(generator: torch.Generator, rows: int = 128) -> dict:
    return dict(obs=torch.randn(rows, 4, generator=generator), action=torch.randint(0, 2, (rows,), generator=generator),
                log_prob=-torch.rand(rows, generator=generator), value=torch.randn(rows, generator=generator),
                advantage=torch.randn(rows, generator=generator), env_step=0,
                **{'return': torch.randn(rows, generator=generator)})


def sac_batch(generator: torch.Generator, rows: int = 256) -> dict:
    return dict(obs=torch.randn(rows, 3, generator=generator), action=torch.rand(rows, 1, generator=generator) * 2 - 1,
                reward=torch.randn(rows, generator=generator), next_obs=torch.randn(rows, 3, generator=generator),
                terminated=torch.zeros(rows, dtype=torch.bool), truncated=torch.zeros(rows, dtype=torch.bool))


CASES = {'cartpole_ppo': ppo_batch, 'pendulum_sac': sac_batch}
WIDTH_KEYS = {'cartpole_ppo': ['encoder_hidden_sizes'], 'pendulum_sac': ['actor_hidden_sizes', 'critic_hidden_sizes']}
BATCH_ROWS = {'cartpole_ppo': 128, 'pendulum_sac': 256}


def seconds_per_call(fn, repeats: int) -> float:
    for _ in range(max(3, repeats // 10)):
        fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def measure(config: str, seeds: int, repeats: int, width: Optional[int] = None) -> dict:
    overrides = [] if width is None else [f'policy.model.{key}=[{width},{width}]' for key in WIDTH_KEYS[config]]
    cfg = load_config(config, overrides=overrides)

    def policies() -> list:
        built = []
        for seed in range(seeds):
            set_seed(seed)
            built.append(build_policy(cfg))
        return built
    alone, group = policies(), policies()
    stack = SeedStack(group)
    batches = [CASES[config](torch.Generator().manual_seed(seed)) for seed in range(seeds)]

    def separate() -> None:
        for policy, batch in zip(alone, batches):
            policy.learn_mode.forward(dict(batch))

    def stacked() -> None:
        copies = [dict(batch) for batch in batches]
        stack.update([policy.learn_mode.plan(batch) for policy, batch in zip(group, copies)], copies)
    separate_s, stacked_s = seconds_per_call(separate, repeats), seconds_per_call(stacked, repeats)
    params = sum(parameter.numel() for parameter in alone[0]._model.parameters())
    return {'config': config, 'seeds': seeds, 'width': width, 'params_x_batch': params * BATCH_ROWS[config],
            'separate_ms': separate_s * 1e3, 'stacked_ms': stacked_s * 1e3, 'gain': separate_s / stacked_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 4, 8])
    parser.add_argument('--repeats', type=int, default=50)
    parser.add_argument('--threads', type=int, default=1, help='torch threads of both sides')
    parser.add_argument('--widths', type=int, nargs='*', default=None, help='hidden widths to sweep')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [measure(config, seeds, args.repeats, width) for config in CASES for width in args.widths or [None]
            for seeds in args.seeds]
    out = OUT if args.threads == 1 else OUT.with_name(f'{OUT.stem}_{args.threads}threads.json')
    if args.widths:
        out = out.with_name(f'{out.stem}_widths.json')
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + '\n')
    print('| config | hidden width | parameters x batch rows | seeds | S separate updates (ms) | one stacked update (ms) '
          '| gain |')
    print('|---|---|---|---|---|---|---|')
    for row in rows:
        print(f"| {row['config']} | {row['width'] or 'its own'} | {row['params_x_batch'] / 1e6:.1f}M | {row['seeds']} "
              f"| {row['separate_ms']:.2f} | {row['stacked_ms']:.2f} | {row['gain']:.2f}x |")


if __name__ == '__main__':
    main()
