"""LightZero's compiled MuZero tree (lightzero 0.2.0, `ctree_muzero`) searched as its `MuZeroMCTSCtree` does.

Runs inside the LightZero venv (`benchmarks/.venv-lightzero`), started by `mcts_speed.py`. Its first
output line names the versions it runs (or why it cannot run); then each input line is a JSON request
{"model", "actions", "batch_size", "simulations"} answered by one JSON line: the seconds of one search
and the fingerprint of its inputs, which `mcts_speed.py` checks against its own. The roots, the model
and the search constants come from `mcts_speed.py` and tidal's `SearchConfig`, so both sides search the
same roots with the same torch model; only the search loop and the tree differ.

Only the compiled tree is loaded, from its file: `import lzero.mcts` would also import LightZero's
buffers and policies, and through them DI-engine and more, none of which the tree uses.
"""
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional

import numpy as np
import torch

from mcts_speed import MODELS, SearchInputs, seconds_of
from tidal.mcts import SearchConfig

VALUE_DELTA_MAX = 0.01  # MuZeroMCTSCtree's default: Q is min-max normalised by max(max - min, this) once max > min
TREE_MODULE = 'lzero.mcts.ctree.ctree_muzero.mz_tree'


def load_tree_module() -> ModuleType:
    """`mz_tree`, the Cython module over LightZero's C++ tree, without running `lzero.mcts`'s imports."""
    spec = importlib.util.find_spec('lzero')  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError('lzero is not installed in this environment')
    folder = Path(spec.submodule_search_locations[0], *TREE_MODULE.split('.')[1:-1])
    files = [f for suffix in importlib.machinery.EXTENSION_SUFFIXES for f in folder.glob('mz_tree' + suffix)]
    if not files:
        raise ImportError(f'lzero has no mz_tree compiled for Python {sys.version.split()[0]}')
    tree_spec = importlib.util.spec_from_file_location(TREE_MODULE, files[0])
    module = importlib.util.module_from_spec(tree_spec)
    tree_spec.loader.exec_module(module)
    return module


def lightzero_search(tree: ModuleType, inputs: SearchInputs, config: SearchConfig,
                     depths: Optional[list[float]] = None) -> Callable[[], object]:
    """One search as `MuZeroMCTSCtree.search` runs it, from the root outputs to the root visit counts.

    Noise and root preparation as LightZero's MuZero policy does them for collection. Latents live in a
    Python list with one [B, D] array per simulation, and each simulation gathers its B leaf parents
    from it by (simulation index, batch index), one by one, as LightZero does. With `depths`, each
    simulation appends the mean depth of its new leaves (for the report, never in a timed search).
    """
    batch_size, num_actions = inputs.root_logits.shape
    legal_actions = [list(range(num_actions))] * batch_size
    to_play = [-1] * batch_size  # single-player: no player to switch
    root_rewards = [0.0] * batch_size  # the initial inference predicts no reward
    rng = np.random.default_rng(0)

    @torch.no_grad()
    def run() -> tuple[list, list]:
        latents = [inputs.root_latent.numpy()]
        noises = rng.dirichlet([config.dirichlet_alpha] * num_actions, size=batch_size).astype(np.float32).tolist()
        roots = tree.Roots(batch_size, legal_actions)
        roots.prepare(config.root_exploration_fraction, noises, root_rewards, inputs.root_logits.tolist(), to_play)
        min_max_stats = tree.MinMaxStatsList(batch_size)
        min_max_stats.set_delta(VALUE_DELTA_MAX)
        for simulation in range(config.num_simulations):
            results = tree.ResultsWrapper(batch_size)
            depth_index, batch_index, actions, virtual_to_play = tree.batch_traverse(
                roots, int(config.pb_c_base), config.pb_c_init, config.discount, min_max_stats, results, to_play)
            if depths is not None:
                depths.append(float(np.mean(results.get_search_len())))
            parents = torch.from_numpy(np.asarray([latents[d][b] for d, b in zip(depth_index, batch_index)]))
            latent, reward, logits, value, _ = inputs.recurrent_fn(parents, torch.from_numpy(np.asarray(actions)).long())
            latents.append(latent.numpy())
            # the new nodes are at depth index simulation + 1 of the latent list
            tree.batch_backpropagate(simulation + 1, config.discount, reward.reshape(-1).tolist(),
                                     value.reshape(-1).tolist(), logits.tolist(), min_max_stats, results,
                                     virtual_to_play)
        return roots.get_distributions(), roots.get_values()

    return run


def serve(tree: ModuleType) -> None:
    """Answers requests until stdin closes; a new setting's first request runs one warm-up search first.

    The warm-up search also measures the trees' mean leaf depth, which the timed searches do not.
    """
    setting, run, about = None, None, {}
    for line in sys.stdin:
        request = json.loads(line)
        key = (request['model'], request['actions'], request['batch_size'], request['simulations'])
        if key != setting:
            inputs = MODELS[request['model']](request['batch_size'], request['actions'])
            config = SearchConfig(num_simulations=request['simulations'])
            depths: list[float] = []
            lightzero_search(tree, inputs, config, depths)()
            run = lightzero_search(tree, inputs, config)
            setting = key
            about = {'fingerprint': inputs.fingerprint(), 'mean_depth': float(np.mean(depths)) if depths else 0.0}
        print(json.dumps({'seconds': seconds_of(run), **about}), flush=True)


def main() -> None:
    torch.set_num_threads(1)
    try:
        tree = load_tree_module()
    except Exception as err:  # reported by mcts_speed.py, which then times tidal alone
        print(json.dumps({'error': f"cannot load LightZero's {TREE_MODULE}: {type(err).__name__}: {err}"}),
              flush=True)
        return
    print(json.dumps({'lightzero': importlib.metadata.version('lightzero'), 'torch': torch.__version__,
                      'numpy': np.__version__, 'value_delta_max': VALUE_DELTA_MAX}), flush=True)
    serve(tree)


if __name__ == '__main__':
    main()
