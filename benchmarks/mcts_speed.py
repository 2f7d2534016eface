"""Simulations per second of tidal's batched MuZero search beside LightZero's compiled MuZero tree.

Both searches get the same roots and the same model for their leaf expansions:
- `trivial` returns fixed tensors (random but fixed logits, rewards and values per root, so the trees
  grow deep along their favourite actions as with a real model): only the search loop and tree are timed;
- `cartpole` is tidal's MuZero network for CartPole, randomly initialised (its value and reward heads
  start at zero, so it predicts ~0 for both), called once per simulation by either search.
The last column, the mean depth of the leaves the simulations add, tells whether both grew similar trees:
a deeper tree costs more per simulation.
LightZero (`lightzero==0.2.0`, its C++ tree `ctree_muzero`) is never installed beside tidal: it lives in
`benchmarks/.venv-lightzero`, made on first use, and runs in `lightzero_mcts_runner.py`, a subprocess
that times one search per request, so the two sides alternate repeat by repeat and machine noise hits
both. Each row is the median over repeats of one search of `--simulations` (root inference excluded):
"sims/s" counts batched simulations (one model call each), "tree-sims/s" counts them per root (B times
more), "tidal/LightZero" is the ratio of their sims/s at equal settings.

    python benchmarks/mcts_speed.py [--batch-sizes 1 8 64] [--simulations 50] [--models trivial cartpole]
        [--actions 2 18] [--repeats 7] [--json PATH] [--no-lightzero]
"""
import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch

from common import BENCH_DIR, REPO_ROOT, display_path, ensure_lightzero_venv, thread_env
from tidal.mcts import RecurrentFn, SearchConfig, expand_root, search, simulate
from tidal.models.muzero import MuZeroModel

LATENT_DIM = 64  # copied once per simulation into the tree; a vector, so the copy stays negligible
CARTPOLE_OBS_DIM, CARTPOLE_ACTIONS = 4, 2
LIGHTZERO_RUNNER = BENCH_DIR / 'lightzero_mcts_runner.py'


@dataclass
class SearchInputs:
    """The model's output on B roots and the model itself, as both searches take them."""

    root_latent: torch.Tensor  # [B, LATENT_DIM]
    root_logits: torch.Tensor  # [B, A]
    root_value: torch.Tensor  # [B]
    recurrent_fn: RecurrentFn

    def fingerprint(self) -> float:
        """A sum over the roots and one model call on them: equal in both processes iff the inputs are."""
        actions = torch.arange(self.root_logits.shape[0]) % self.root_logits.shape[1]
        tensors = [self.root_latent, self.root_logits, self.root_value, *self.recurrent_fn(self.root_latent, actions)[:4]]
        return float(sum(t.double().sum() for t in tensors))


def trivial_inputs(batch_size: int, num_actions: int, seed: int = 0) -> SearchInputs:
    """Roots whose recurrent function returns the same fixed outputs on every call."""
    g = torch.Generator().manual_seed(seed)
    latent = torch.zeros(batch_size, LATENT_DIM)
    logits = torch.randn(batch_size, num_actions, generator=g)
    reward, value = torch.rand(batch_size, generator=g), torch.rand(batch_size, generator=g)
    return SearchInputs(latent, logits, value, lambda latent_in, action: (latent, reward, logits, value, None))


@torch.no_grad()
def cartpole_inputs(batch_size: int, num_actions: int = CARTPOLE_ACTIONS, seed: int = 0) -> SearchInputs:
    """tidal's MuZero network for CartPole (seeded, so both processes build the same one) on random states."""
    if num_actions != CARTPOLE_ACTIONS:
        raise ValueError(f'the cartpole model has {CARTPOLE_ACTIONS} actions, not {num_actions}')
    torch.manual_seed(seed)
    model = MuZeroModel(obs_shape=CARTPOLE_OBS_DIM, action_shape=CARTPOLE_ACTIONS, latent_size=LATENT_DIM,
                        hidden_sizes=(64, 64)).eval()
    obs = torch.randn(batch_size, CARTPOLE_OBS_DIM, generator=torch.Generator().manual_seed(seed))
    root = model.initial_inference(obs)
    return SearchInputs(root.latent, root.policy_logits, model.value(root), model.recurrent_fn)


# model name -> (batch size, number of actions) -> the inputs of a search; the runner builds its own from here
MODELS: dict[str, Callable[[int, int], SearchInputs]] = {'trivial': trivial_inputs, 'cartpole': cartpole_inputs}


def tidal_search(inputs: SearchInputs, config: SearchConfig) -> Callable[[], object]:
    generator = torch.Generator().manual_seed(0)
    return lambda: search(inputs.root_latent, inputs.root_logits, inputs.root_value, inputs.recurrent_fn, config,
                          generator=generator)


def seconds_of(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# ---------------------------------------------------------------- the LightZero side, in its own venv

class LightZeroError(RuntimeError):
    """The LightZero side cannot run; its message says why, for the report."""


class LightZeroRunner:
    """`lightzero_mcts_runner.py` in the LightZero venv: one JSON request per line in, one reply per line out."""

    def __init__(self, python: Path) -> None:
        self._proc = subprocess.Popen([str(python), str(LIGHTZERO_RUNNER)], cwd=REPO_ROOT, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env={**os.environ, **thread_env(1)})
        self.about = self._reply()  # the runner's first line: its versions and settings, or why it cannot run

    def search(self, model: str, num_actions: int, batch_size: int, simulations: int) -> dict:
        """{seconds of one search, fingerprint of the runner's inputs, mean leaf depth of its trees}.

        The first request of a setting also runs an untimed warm-up search.
        """
        request = {'model': model, 'actions': num_actions, 'batch_size': batch_size, 'simulations': simulations}
        try:
            self._proc.stdin.write(json.dumps(request) + '\n')
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the runner has exited: `_reply` says with which code
        return self._reply()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)

    def _reply(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            raise LightZeroError(f'the runner exited with code {self._proc.wait()} (its stderr is above)')
        reply = json.loads(line)
        if 'error' in reply:
            raise LightZeroError(reply['error'])
        return reply


def start_lightzero() -> LightZeroRunner:
    """The runner, with the venv made first if needed; any failure becomes a LightZeroError saying why."""
    try:
        return LightZeroRunner(ensure_lightzero_venv())
    except subprocess.CalledProcessError as err:
        cmd = shlex.join(display_path(Path(arg)) if os.path.isabs(arg) else arg for arg in err.cmd)
        last_line = (err.stderr or '').strip().splitlines()[-1:]
        raise LightZeroError(f'`{cmd}` exited with code {err.returncode}' + ''.join(f': {line}' for line in last_line)
                             ) from err
    except (OSError, SystemExit) as err:
        raise LightZeroError(f'{type(err).__name__}: {err}') from err


# ---------------------------------------------------------------- measuring and reporting

def tidal_mean_depth(inputs: SearchInputs, config: SearchConfig) -> float:
    """Mean depth of the leaf each simulation adds, over the trees of one search like `tidal_search`'s first."""
    tree = expand_root(inputs.root_latent, inputs.root_logits, inputs.root_value, config,
                       generator=torch.Generator().manual_seed(0))
    for _ in range(config.num_simulations):
        simulate(tree, inputs.recurrent_fn, config)
    depth = np.zeros(tree.children.shape[:2])
    for node in range(tree.num_nodes):  # a child's id is above its parent's, so parents come first
        trees, actions = np.nonzero(tree.children[:, node] >= 0)
        depth[trees, tree.children[trees, node, actions]] = depth[trees, node] + 1
    return float(depth[:, 1:tree.num_nodes].mean()) if tree.num_nodes > 1 else 0.0


def measure(model: str, num_actions: int, batch_size: int, config: SearchConfig, repeats: int,
            lightzero: Optional[LightZeroRunner]) -> dict[str, dict]:
    """Per implementation, the seconds of `repeats` searches, alternating after one warm-up each, and
    the mean leaf depth of its trees (deeper trees cost more per simulation)."""
    inputs = MODELS[model](batch_size, num_actions)
    run = tidal_search(inputs, config)
    run()
    results = {'tidal': {'seconds': [], 'mean_depth': tidal_mean_depth(inputs, config)}}
    if lightzero is not None:
        reply = lightzero.search(model, num_actions, batch_size, config.num_simulations)
        if not np.isclose(reply['fingerprint'], inputs.fingerprint(), rtol=1e-6):
            raise LightZeroError(f"the runner built other inputs for {model} (fingerprint {reply['fingerprint']}, "
                                 f'tidal {inputs.fingerprint()})')
        results['LightZero'] = {'seconds': [], 'mean_depth': reply['mean_depth']}
    for _ in range(repeats):
        results['tidal']['seconds'].append(seconds_of(run))
        if lightzero is not None:
            reply = lightzero.search(model, num_actions, batch_size, config.num_simulations)
            results['LightZero']['seconds'].append(reply['seconds'])
    return results


def result_rows(model: str, num_actions: int, batch_size: int, simulations: int,
                results: dict[str, dict]) -> list[dict]:
    """One row per implementation; tidal's carries the ratio of its sims/s to LightZero's."""
    rows = []
    for name, result in results.items():
        median = statistics.median(result['seconds'])
        rows.append({'implementation': name, 'model': model, 'actions': num_actions, 'batch_size': batch_size,
                     'simulations': simulations, 'ms_per_search': median * 1e3, 'sims_per_s': simulations / median,
                     'tree_sims_per_s': batch_size * simulations / median, 'mean_depth': result['mean_depth'],
                     'seconds': result['seconds']})
    if 'LightZero' in results:
        rows[0]['tidal_over_lightzero'] = rows[0]['sims_per_s'] / rows[1]['sims_per_s']
    return rows


def machine_free(message: str) -> str:
    """`message` with paths inside the checkout made relative, so saved results name no machine paths."""
    return message.replace(str(REPO_ROOT) + os.sep, '')


TABLE_HEADER = ('| implementation | model | actions | batch | ms/search | sims/s | tree-sims/s | tidal/LightZero '
                '| leaf depth |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')


def table_line(row: dict) -> str:
    ratio = f"{row['tidal_over_lightzero']:.2f}" if 'tidal_over_lightzero' in row else ''
    return (f"| {row['implementation']} | {row['model']} | {row['actions']} | {row['batch_size']} | "
            f"{row['ms_per_search']:.2f} | {row['sims_per_s']:.0f} | {row['tree_sims_per_s']:.0f} | {ratio} | "
            f"{row['mean_depth']:.1f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--batch-sizes', type=int, nargs='+', default=[1, 8, 64])
    parser.add_argument('--simulations', type=int, default=50)
    parser.add_argument('--models', nargs='+', choices=list(MODELS), default=list(MODELS))
    parser.add_argument('--actions', type=int, nargs='+', default=[2, 18], help='actions of the trivial model')
    parser.add_argument('--repeats', type=int, default=7)
    parser.add_argument('--json', type=Path, help='also write the settings and rows here')
    parser.add_argument('--no-lightzero', action='store_true', help="time tidal's search alone")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = SearchConfig(num_simulations=args.simulations)
    lightzero, lightzero_error = None, None
    if not args.no_lightzero:
        try:
            lightzero = start_lightzero()
        except LightZeroError as err:
            lightzero_error = machine_free(str(err))
            print(f'LightZero cannot run, timing tidal alone: {lightzero_error}', flush=True)
    lightzero_about = lightzero.about if lightzero else None  # kept for the JSON once the runner is closed
    versions = {'python': platform.python_version(), 'torch': torch.__version__, 'numpy': np.__version__,
                **({'lightzero': lightzero_about['lightzero']} if lightzero_about else {})}
    print(f"{args.simulations} simulations, median of {args.repeats} searches, "
          + ', '.join(f'{k} {v}' for k, v in versions.items()) + '\n\n' + TABLE_HEADER, flush=True)
    settings = [(model, actions) for model in args.models
                for actions in (args.actions if model == 'trivial' else [CARTPOLE_ACTIONS])]
    rows: list[dict] = []
    for model, num_actions in settings:
        for batch_size in args.batch_sizes:
            try:
                results = measure(model, num_actions, batch_size, config, args.repeats, lightzero)
            except LightZeroError as err:  # the runner died or disagrees: say why and go on with tidal alone
                lightzero_error = machine_free(str(err))
                print(f'LightZero failed, timing tidal alone from here: {lightzero_error}', flush=True)
                lightzero.close()
                lightzero = None
                results = measure(model, num_actions, batch_size, config, args.repeats, None)
            for row in result_rows(model, num_actions, batch_size, args.simulations, results):
                rows.append(row)
                print(table_line(row), flush=True)
    if lightzero is not None:
        lightzero.close()
    if lightzero_error:
        print(f'\nLightZero: {lightzero_error}')
    if args.json:
        report = {'simulations': args.simulations, 'repeats': args.repeats, 'threads': 1, 'versions': versions,
                  'search_config': asdict(config),
                  'lightzero_runner': lightzero_about, 'lightzero_error': lightzero_error, 'rows': rows}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + '\n')
        print(f'wrote {display_path(args.json)}')


if __name__ == '__main__':
    main()
