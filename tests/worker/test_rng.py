"""rng_state / set_rng_state: plain enough for weights_only loading, and exact enough to replay draws; stream_seed."""
import io
import random

import numpy as np
import torch

from tidal.worker.rng import rng_state, set_rng_state, stream_seed


def draws() -> tuple:
    return (random.random(), random.gauss(0, 1), random.getrandbits(100), np.random.rand(3).tolist(),
            np.random.standard_normal(), torch.rand(3).tolist(), torch.randn(2).tolist())


def plain_types(value) -> set:
    if isinstance(value, dict):
        return {type(value)}.union(*(plain_types(item) for item in value.values()))
    if isinstance(value, list):
        return {type(value)}.union(*(plain_types(item) for item in value))
    return {type(value)}


def test_round_trip_through_weights_only_load_replays_the_same_draws():
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    random.gauss(0, 1), np.random.standard_normal()  # leave a cached gaussian in both
    buffer = io.BytesIO()
    torch.save(rng_state(), buffer)
    expected = draws()
    buffer.seek(0)
    set_rng_state(torch.load(buffer, weights_only=True))
    assert draws() == expected


def test_state_holds_only_plain_values_and_tensors():
    allowed = {dict, list, str, int, float, bool, type(None), torch.Tensor}
    assert plain_types(rng_state()) <= allowed


def test_python_state_is_rebuilt_as_the_exact_tuple():
    random.seed(5)
    random.gauss(0, 1)
    before = random.getstate()
    state = rng_state()
    random.seed(6)
    set_rng_state(state)
    assert random.getstate() == before


def test_stream_seeds_of_neighbouring_run_seeds_do_not_overlap():
    # a vector env of 8 seeds env i with s + i: the streams of runs 0 and 1 must not share any env
    envs = 8
    seeds = {run: stream_seed(run) for run in range(3)}
    for a in seeds.values():
        for b in seeds.values():
            if a != b:
                assert abs(a - b) >= envs
    assert stream_seed(0, 400) != stream_seed(1, 399)
    assert stream_seed(0) == stream_seed(0)  # repeatable
    assert all(0 <= stream_seed(run, k) < 2**31 - envs for run in range(5) for k in range(5))
