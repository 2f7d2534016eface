"""What the seed-stack tests share: seeds built as a run builds them, and S updates alone beside one stacked update,
each seed's noise drawn from its own stream on both sides. Importable as `seed_stacking` (tests/worker is on the
import path of its tests)."""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional, Sequence

import torch

from tidal.entry.setup import load_config
from tidal.worker.builders import build_policy, set_seed
from tidal.worker.seed_stack import SeedStack

SEEDS = (0, 1, 2)


def policies(config: str, overrides: Sequence[str] = (), seeds: Sequence[int] = SEEDS) -> list:
    """One policy per seed of a zoo config, each built after seeding the generators as a run does."""
    cfg = load_config(config, overrides=list(overrides))
    built = []
    for seed in seeds:
        set_seed(seed)
        built.append(build_policy(copy.deepcopy(cfg)))
    return built


def pendulum_batch(generator: torch.Generator, rows: int = 64) -> dict:
    """A replay batch of Pendulum's shapes (3 observation, 1 action dimensions)."""
    return dict(obs=torch.randn(rows, 3, generator=generator),
                action=torch.rand(rows, 1, generator=generator) * 2 - 1,
                reward=torch.randn(rows, generator=generator),
                next_obs=torch.randn(rows, 3, generator=generator),
                terminated=torch.rand(rows, generator=generator) < 0.1,
                truncated=torch.zeros(rows, dtype=torch.bool))


def run_alone_and_stacked(config: str, make_batch: Callable[[torch.Generator], dict], overrides: Sequence[str] = (),
                          rounds: int = 20, each_round: Optional[Callable[[list, list], Any]] = None
                          ) -> tuple[list, list, list, list]:
    """`rounds` updates of each seed alone and of the same seeds stacked, on the same batches, each seed's noise from
    its own stream on both sides; `each_round(infos alone, infos stacked)` after every round. Returns (alone
    policies, stacked policies, last infos alone, last infos stacked)."""
    alone, group = policies(config, overrides), policies(config, overrides)
    stack = SeedStack(group)
    data = [torch.Generator().manual_seed(seed) for seed in SEEDS]
    noise_alone = [torch.Generator().manual_seed(100 + seed).get_state() for seed in SEEDS]
    noise_group = list(noise_alone)

    def on_stream(streams: list, seed: int, fn: Callable[[], Any]) -> Any:
        torch.set_rng_state(streams[seed])
        result = fn()
        streams[seed] = torch.get_rng_state()
        return result

    infos: list = []
    stacked: list = []
    for _ in range(rounds):
        batches = [make_batch(generator) for generator in data]
        copies = [dict(batch) for batch in batches]
        infos = [on_stream(noise_alone, s, lambda: alone[s].learn_mode.forward(batches[s])) for s in range(len(SEEDS))]
        plans = [on_stream(noise_group, s, lambda: group[s].learn_mode.plan(copies[s])) for s in range(len(SEEDS))]
        stacked = stack.update(plans, copies)
        if each_round is not None:
            each_round(infos, stacked)
    return alone, group, infos, stacked
