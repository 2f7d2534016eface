"""The defaults tree a config is checked against: run-level keys and the classes' `config` dicts."""
from __future__ import annotations

from tidal.defaults import class_defaults, merge_defaults

__all__ = ['RunConfig', 'class_defaults', 'merge_defaults']


class RunConfig:
    """Top-level keys of a compiled config, beside its env, env_manager and policy sections."""

    config: dict = dict(
        # (str) Name of the run folder; empty means '<policy type>_<env id>'.
        exp_name='',
        # (int in [0, 2**63 - 1]) Seed of the run; compile_config's `seed` argument (the CLI's -s) wins.
        seed=0,
        # (list[str]) Modules to import before names are looked up (a user's own policy, model or env).
        import_names=[],
        # (int in [0, 1024]) CPU threads for torch; 0 keeps torch's default (one per core). Small networks
        # run fastest on 1 whenever anything else uses the other cores, where extra threads spin and stall.
        torch_threads=1,
        # (bool) Flush subnormal floats to zero on CPU. Adam's second moments of rarely-moving weights
        # decay into subnormals, which make every matmul that touches them several times slower.
        flush_denormal=True,
    )
