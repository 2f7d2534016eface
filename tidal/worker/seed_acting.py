"""Acting for every seed of a group in one forward pass: the seeds' stacked weights against their observations.

A policy that states a mode's forward as `ActingSteps` acts for all seeds at once: each seed prepares its own
input (its own normalisation statistics) and draws its own noise (from its own stream, exactly as a run alone
draws it), then the shared `act` runs once on a twin of the model whose layers hold the stacked weights
[S, ...] and take inputs [S, N, ...]. A `torch.func.vmap` of the seed's own forward costs as much as the S
forwards it replaces on small networks (its cost per op), while the twin's batched matmuls cost about a third of
them (8 seeds of PPO or SAC, results.md section 22).

The twin is built from the model's modules: `nn.Linear` becomes a batched matmul over the seed dimension,
parameter-free layers (activations, containers) are kept, and a module's own tensors (a log std) get the seed
dimension with a broadcast dimension after it. Any other layer with weights (a convolution) cannot run on
stacked seeds; the first batched forward of a mode is checked against the seeds' own forwards, and a mode that
fails the check (or that layer) acts per seed from then on, which the group says in one line.
"""
from __future__ import annotations

import copy
from contextlib import nullcontext as _nothing
from typing import Any, Callable, Optional, Sequence

import torch
import torch.nn as nn

from tidal.base.modes import ActingSteps
from tidal.base.nest import tree_leaves, tree_map, tree_zip_map
from tidal.worker.collector import SampleCollector, steps_per_env
from tidal.worker.evaluator import EvalEpisodes
from tidal.worker.seed_stack import SeedStack

CHECK_ATOL = 1e-4  # the stacked forward against the seeds' own, on the first batch (float32 rounding)


class Unbatchable(RuntimeError):
    """A layer of the acting model that cannot run on stacked seeds."""


class SeedLinear(nn.Module):
    """`nn.Linear` of S seeds at once: weight [S, out, in] and bias [S, out] against input [S, ..., in]."""

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> None:
        super().__init__()
        self.weight, self.bias = weight, bias
        self.out_features = weight.shape[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], -1, x.shape[-1])
        weight = self.weight.transpose(1, 2)
        out = torch.bmm(rows, weight) if self.bias is None else torch.baddbmm(self.bias.unsqueeze(1), rows, weight)
        return out.reshape(*x.shape[:-1], self.out_features)


class _CannotStack(nn.Module):
    """Stands for a layer that cannot run on stacked seeds; fails when the acting forward reaches it."""

    def __init__(self, name: str, layer: nn.Module) -> None:
        super().__init__()
        self.why = f"its layer '{name}' ({type(layer).__name__}) cannot run on stacked seeds"

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise Unbatchable(self.why)


def seed_twin(module: nn.Module, stacked_of: Callable[[torch.Tensor], Optional[torch.Tensor]],
              name: str = 'model') -> nn.Module:
    """A twin of `module` (one seed's) computing every seed at once, on the stacked tensors `stacked_of` gives for
    the seed's own (views: the twin reads every update the stack makes)."""
    if type(module) is nn.Linear:
        weight = stacked_of(module.weight)
        bias = None if module.bias is None else stacked_of(module.bias)
        if weight is None or (module.bias is not None and bias is None):
            return _CannotStack(name, module)
        return SeedLinear(weight, bias)
    own = {key: value for key, value in [*module._parameters.items(), *module._buffers.items()] if value is not None}
    if own and type(module).__module__.startswith('torch.nn'):
        return _CannotStack(name, module)  # a torch layer with weights other than Linear (conv, norm, embedding)
    twin = copy.copy(module)
    twin._parameters, twin._buffers = {}, {}
    twin._modules = {key: None if child is None else seed_twin(child, stacked_of, f'{name}.{key}')
                     for key, child in module._modules.items()}
    for key, tensor in own.items():
        stacked = stacked_of(tensor)
        if stacked is None or tensor.dim() == 0:
            return _CannotStack(name, module)
        twin._buffers[key] = stacked.unsqueeze(1)  # [S, 1, ...]: broadcast over each seed's batch
    return twin


def stack_seeds(values: Sequence[Any]) -> Any:
    """The seeds' nests (tensors, None, dicts, tuples) stacked along a new first dimension."""
    return tree_zip_map(lambda leaves: None if leaves[0] is None else torch.stack(leaves), values, sequences=True)


def seed_slice(value: Any, seed: int) -> Any:
    """Seed `seed`'s part of a stacked nest."""
    return tree_map(lambda leaf: leaf if leaf is None else leaf[seed], value, sequences=True)


class SeedActor:
    """One mode's forward for the seeds of a `SeedStack` (their `ActingSteps`, in the stack's order).

    The first call is checked against the seeds' own forwards; where the twin fails (a layer it cannot stack)
    or differs, this actor acts per seed from then on, and `why_per_seed` says why.
    """

    def __init__(self, stack: SeedStack, steps: Sequence[ActingSteps], mode: str) -> None:
        self.steps, self.mode = list(steps), mode
        self.twin = seed_twin(self.steps[0].model, stack.stacked_of)
        self.checked = False
        layer = next((module for module in self.twin.modules() if isinstance(module, _CannotStack)), None)
        self.why_per_seed: Optional[str] = None if layer is None else layer.why

    @property
    def size(self) -> int:
        return len(self.steps)

    def act(self, inputs: Sequence[Any], noises: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        """Every seed's output of its prepared input and drawn noise."""
        if self.why_per_seed is None:
            try:
                out = self.steps[0].act(self.twin, stack_seeds(inputs), stack_seeds(noises))
                outputs = [seed_slice(out, seed) for seed in range(self.size)]
                if not self.checked:
                    _check_same(outputs, self._own(inputs, noises), self.mode)
                    self.checked = True
                return outputs
            except Exception as err:  # noqa: BLE001 - the first batch decides; later errors are real ones
                if self.checked:
                    raise
                self.why_per_seed = f'its stacked forward failed ({type(err).__name__}: {err})'
        return self._own(inputs, noises)

    def _own(self, inputs: Sequence[Any], noises: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        return [steps.act(steps.model, x, noise) for steps, x, noise in zip(self.steps, inputs, noises)]


SeedFailed = Callable[[int, Exception], None]  # (position in the stack, error): that seed stops


def collect_together(collectors: Sequence[Optional[SampleCollector]], actor: SeedActor, n_sample: int,
                     failed: SeedFailed) -> list[Optional[dict[str, Any]]]:
    """The training samples of one collection of `n_sample` env steps for each seed that has a collector (None:
    a seed that collects on its own), all seeds acting in one forward per step.

    Each seed's prepare, draws and env step run on its collector's own acting stream, as its collection alone
    would; a seed that fails is reported to `failed` and left out from then on.
    """
    own = {index: collector for index, collector in enumerate(collectors) if collector is not None}
    active = list(own)
    rows: dict[int, list[dict[str, Any]]] = {index: [] for index in active}
    for _ in range(steps_per_env(n_sample, own[active[0]].num_envs)):
        prepared = _prepare(active, lambda index: (own[index], own[index].obs), actor, failed)
        if not prepared:
            break
        outputs = actor.act(*_padded(prepared, actor.size))
        for index in list(prepared):
            collector = own[index]
            try:
                with collector.acting_rng():
                    rows[index].append(collector.advance(outputs[index])[0])
            except Exception as err:  # noqa: BLE001 - the seed's own failure, reported and left out
                _drop(active, index, err, failed)
    samples: list[Optional[dict[str, Any]]] = [None] * len(collectors)
    for index in list(active):
        collector = own[index]
        try:
            with collector.acting_rng():
                samples[index] = collector.train_sample(rows[index])
        except Exception as err:  # noqa: BLE001
            _drop(active, index, err, failed)
    return samples


def evaluate_together(evaluations: Sequence[Optional[EvalEpisodes]], actor: SeedActor, failed: SeedFailed) -> None:
    """Run the seeds' evaluations under way (None: a seed that does not evaluate now) to their ends, all seeds
    acting in one forward per step; a seed that fails is reported to `failed` and left out."""
    running = {index: episodes for index, episodes in enumerate(evaluations) if episodes is not None}
    active = list(running)
    while True:
        active[:] = [index for index in active if not running[index].done]
        if not active:
            return
        prepared = _prepare(active, lambda index: (None, running[index].obs), actor, failed)
        if not prepared:
            continue
        outputs = actor.act(*_padded(prepared, actor.size))
        for index in list(prepared):
            try:
                running[index].step(outputs[index]['action'])
            except Exception as err:  # noqa: BLE001
                _drop(active, index, err, failed)


def _prepare(active: list[int], source: Callable[[int], tuple[Any, Any]], actor: SeedActor,
             failed: SeedFailed) -> dict[int, tuple[Any, Any]]:
    """(input, noise) of each active seed, on the collector's acting stream where `source` gives a collector."""
    prepared = {}
    for index in list(active):
        collector, obs = source(index)
        steps = actor.steps[index]
        try:
            with collector.acting_rng() if collector is not None else _nothing():
                inputs = steps.prepare(obs)
                prepared[index] = (inputs, steps.draw(inputs, None if collector is not None else steps.generator))
        except Exception as err:  # noqa: BLE001
            _drop(active, index, err, failed)
    return prepared


def _padded(prepared: dict[int, tuple[Any, Any]], size: int) -> tuple[list[Any], list[Any]]:
    """Inputs and noises of every seed of the stack: a seed without any this step gets another's, and its output
    is not read."""
    filler = next(iter(prepared.values()))
    pairs = [prepared.get(index, filler) for index in range(size)]
    return [pair[0] for pair in pairs], [pair[1] for pair in pairs]


def _drop(active: list[int], index: int, err: Exception, failed: SeedFailed) -> None:
    active.remove(index)
    failed(index, err)


def _check_same(stacked: list[dict[str, Any]], own: list[dict[str, Any]], mode: str) -> None:
    for seed, (mine, theirs) in enumerate(zip(stacked, own)):
        ours, references = dict(tree_leaves(mine, sequences=True)), dict(tree_leaves(theirs, sequences=True))
        if ours.keys() != references.keys():
            raise Unbatchable(f'its stacked {mode} forward gives other outputs than its own')
        for path, value in ours.items():
            reference = references[path]
            if value is None and reference is None:
                continue
            same = (isinstance(value, torch.Tensor) and isinstance(reference, torch.Tensor)
                    and value.shape == reference.shape and value.dtype == reference.dtype
                    and (torch.equal(value, reference) if not value.is_floating_point()
                         else torch.allclose(value, reference, atol=CHECK_ATOL, rtol=CHECK_ATOL)))
            if not same:
                raise Unbatchable(f"its stacked {mode} forward differs from seed {seed}'s own in output "
                                  f"'{'.'.join(str(key) for key in path)}'")
