"""The global random generators' state, in a form `torch.load(weights_only=True)` accepts.

A resumed run must draw the same numbers as the run it continues, and its checkpoint must load
without unpickling arbitrary objects: so the state is kept as dicts, lists, Python scalars and tensors
only, never numpy arrays or tuples holding them.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from tidal.base.errors import CheckpointError

_KEYS = ('python', 'numpy', 'torch')
_ENV_SEED_BOUND = 2**31 - 2**16  # room for gymnasium's `seed + i` over the envs of a vector env


def stream_seed(seed: int, *stream: int) -> int:
    """A seed for one stream of a run (the collector's envs, one evaluation), well apart from others.

    `seed + k` would make the envs of seed 0 and seed 1 share all but one episode stream, since a
    vector env seeds env i with `seed + i`; hashing the pair keeps seeds independent.
    """
    return int(np.random.SeedSequence([seed, *stream]).generate_state(1, np.uint32)[0]) % _ENV_SEED_BOUND


def rng_state() -> dict[str, Any]:
    """Python's `random`, numpy's global generator, torch's CPU generator (and CUDA's when present)."""
    version, internal, gauss_next = random.getstate()
    state: dict[str, Any] = {
        'python': {'version': version, 'internal': torch.tensor(internal, dtype=torch.int64),
                   'gauss_next': gauss_next},
        'numpy': _numpy_to_plain(np.random.get_state(legacy=False)),
        'torch': torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what `rng_state` returned; CUDA's state is skipped on a machine without CUDA."""
    missing = [key for key in _KEYS if key not in state]
    if missing:
        raise CheckpointError(f'rng state is missing {missing}; it was not written by rng_state()')
    python = state['python']
    random.setstate((python['version'], tuple(python['internal'].tolist()), python['gauss_next']))
    np.random.set_state(_numpy_from_plain(state['numpy']))
    torch.set_rng_state(state['torch'].cpu())
    if 'cuda' in state and torch.cuda.is_available():
        # a run resumed on fewer GPUs restores the devices it has
        for device, device_state in enumerate(state['cuda'][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(device_state.cpu(), device)


class GeneratorSnapshot:
    """The global generators' state as the libraries give it, for putting a run's generators aside while another
    run of the process draws (a seed group): cheaper than `rng_state`, and not for checkpoints. `torch_only`: torch's
    generators alone, all that some blocks draw from, at a fraction of the cost."""

    def __init__(self) -> None:
        self.take()

    def take(self, torch_only: bool = False) -> None:
        """Keep the generators as they are now."""
        if not torch_only:
            self.python, self.numpy = random.getstate(), np.random.get_state()
        self.torch = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None

    def restore(self, torch_only: bool = False) -> None:
        """Put the kept state back in place."""
        if not torch_only:
            random.setstate(self.python)
            np.random.set_state(self.numpy)
        torch.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


def _numpy_to_plain(value: Any) -> Any:
    """numpy's state dict with every array as a tensor (unsigned arrays viewed as signed, same bits)."""
    if isinstance(value, dict):
        return {key: _numpy_to_plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        signed = value.view(value.dtype.str.replace('u', 'i')) if value.dtype.kind == 'u' else value
        return {'numpy_dtype': value.dtype.str, 'data': torch.from_numpy(signed.copy())}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _numpy_from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {'numpy_dtype', 'data'}:
            return value['data'].cpu().numpy().view(np.dtype(value['numpy_dtype']))
        return {key: _numpy_from_plain(item) for key, item in value.items()}
    return value
