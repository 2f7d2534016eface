"""Simulations per second of the batched MuZero search, with a model that costs nothing.

The model returns fixed tensors (random but fixed logits, rewards and values per root, so the trees
grow deep along their favourite actions as with a real model), hence only the tree is timed. One line
per (implementation, batch size): the median over repeats of one search of `--simulations`. "sims/s"
counts batched simulations (one model call each), "tree-sims/s" counts them per root (B times more).

    python benchmarks/mcts_speed.py [--batch-sizes 1 8 64] [--simulations 50] [--actions 18] [--repeats 7]
"""
import argparse
import statistics
import time
from typing import Callable

import torch

from tidal.mcts import SearchConfig, search

LATENT_DIM = 64  # copied once per simulation into the tree; a vector, so the copy stays negligible


def trivial_model(batch_size: int, num_actions: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Root inputs and the fixed outputs the recurrent function returns on every call."""
    g = torch.Generator().manual_seed(seed)
    return {'latent': torch.zeros(batch_size, LATENT_DIM), 'logits': torch.randn(batch_size, num_actions, generator=g),
            'reward': torch.rand(batch_size, generator=g), 'value': torch.rand(batch_size, generator=g)}


def tidal_search(model: dict[str, torch.Tensor], config: SearchConfig) -> Callable[[], object]:
    def recurrent_fn(latent: torch.Tensor, action: torch.Tensor):
        return model['latent'], model['reward'], model['logits'], model['value']

    generator = torch.Generator().manual_seed(0)
    return lambda: search(model['latent'], model['logits'], model['value'], recurrent_fn, config, generator=generator)


# implementation name -> (model, config) -> a callable running one search. LightZero's compiled tree
# (lzero.mcts.ctree) goes here beside tidal's, fed the same trivial model and config.
IMPLEMENTATIONS: dict[str, Callable[[dict[str, torch.Tensor], SearchConfig], Callable[[], object]]] = {
    'tidal': tidal_search,
}


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 8, 64])
    parser.add_argument('--simulations', type=int, default=50)
    parser.add_argument('--actions', type=int, default=18)
    parser.add_argument('--repeats', type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = SearchConfig(num_simulations=args.simulations)
    for name, implementation in IMPLEMENTATIONS.items():
        for batch_size in args.batch_sizes:
            run = implementation(trivial_model(batch_size, args.actions), config)
            seconds = median_seconds(run, args.repeats)
            print(f'{name:8s} batch {batch_size:3d}, {args.simulations} simulations, {args.actions} actions: '
                  f'{seconds * 1e3:7.2f} ms/search, {args.simulations / seconds:8.0f} sims/s, '
                  f'{batch_size * args.simulations / seconds:9.0f} tree-sims/s', flush=True)


if __name__ == '__main__':
    main()
