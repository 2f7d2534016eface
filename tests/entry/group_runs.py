"""Reading a seed group's seeds back for the group tests: a seed's eval returns and its final weights, and two
models compared within a tolerance."""
from __future__ import annotations

import csv

import torch

from tidal.worker.checkpoint import load_checkpoint


def returns(run_dir):
    with open(run_dir / 'evals.csv') as file:
        return [float(row['return_mean']) for row in csv.DictReader(file)]


def final_model(run_dir):
    return load_checkpoint(run_dir / 'ckpt' / 'latest.pt')['policy']['model']


def assert_same_model(a, b, tol):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=tol, rtol=0), (key, (a[key] - b[key]).abs().max())
