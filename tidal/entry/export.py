"""`tidal export`: a run's deterministic acting policy as one TorchScript or ONNX file, checked against the
eval mode on real observations before it is put in place.

The file maps what the env gives (observations as they come, uint8 images included, and the action mask where
there is one) to what the env takes: observation normalisation is frozen into it at the checkpoint's
statistics, and the adapter's action clipping and rescaling follow the policy's output.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch
from easydict import EasyDict

from tidal.base.errors import ConfigError, TidalError
from tidal.base.nest import concat, to_tensor, tree_map
from tidal.entry.export_files import FORMATS, ExportedFile, require_onnx, write_exported
from tidal.entry.saved_run import env_interface, saved_policy, saved_run
from tidal.envs.action_bounds import ActionBounds
from tidal.models.acting import ActingNetwork, CastObservation, EnvActionScale, WithEnvActions
from tidal.policies.base import Policy
from tidal.policies.common import split_action_mask
from tidal.rl_utils.normalizer import FrozenNormalizer
from tidal.worker.builders import EVALUATOR_SEED_OFFSET, build_env_manager, configure_torch, set_seed

PARITY_ENVS = 4  # envs stepped with random actions for the parity observations
PARITY_STEPS = 32  # steps of each: 128 observations
#: max |exported - eval mode| of float outputs, relative where the values exceed 1. TorchScript runs torch's own
#: kernels; ONNX Runtime sums matmuls in another order and approximates tanh, which float32 networks with large
#: activations (hundreds) show at the 1e-5 level.
TOLERANCES = {'torchscript': 1e-5, 'onnx': 1e-4}


@dataclass(frozen=True)
class Parity:
    """The exported file against the eval mode (or, for networks that are no policy, the model itself)."""

    max_abs_diff: float  # over float outputs; 0.0 where every output is discrete
    observations: int
    exact: bool  # every output discrete, compared for equality
    tolerance: float
    reference: str

    def line(self) -> str:
        if self.exact:
            return (f'parity: exported == {self.reference} on all {self.observations} real observations (discrete: '
                    f'exact equality)')
        return (f'parity: max |exported - {self.reference}| = {self.max_abs_diff:.3g} over {self.observations} real '
                f'observations (tolerance {self.tolerance:.0e}, relative above 1; discrete outputs equal)')


@dataclass(frozen=True)
class ExportResult:
    """What `tidal export` wrote and how it was checked; `summary` is what the CLI prints."""

    path: Path
    format: str
    checkpoint: Path
    file: ExportedFile
    parity: Parity
    notes: Sequence[str] = field(default_factory=tuple)

    def summary(self) -> str:
        lines = [f'exported {self.checkpoint} as {self.format}: {self.path} ({_size(self.path.stat().st_size)})',
                 *(f'  input  {spec}' for spec in self.file.inputs),
                 *(f'  output {spec}' for spec in self.file.outputs),
                 *self.notes, self.parity.line()]
        return '\n'.join(lines)


def export_policy(source: str | os.PathLike, format: str = 'torchscript',
                  output: Optional[str | os.PathLike] = None, obs_dtype: Optional[torch.dtype] = None
                  ) -> ExportResult:
    """Export the policy of a run folder (its ckpt/best.pt, else ckpt/latest.pt) or of a checkpoint inside one
    to `output` (default: <run folder>/export/policy.pt or .onnx), written atomically once it matches.

    `obs_dtype`: the dtype the file takes observations in, where it is not the env adapter's (the float64 of
    a raw gymnasium env, which the file casts as the adapter does); checked on the same observations, cast."""
    if format not in FORMATS:
        raise ConfigError(f"unknown export format '{format}'; choose from {sorted(FORMATS)}")
    if format == 'onnx':
        require_onnx()
    saved = saved_run(source, 'export')
    cfg = saved.cfg
    configure_torch(cfg)
    set_seed(cfg.seed)
    policy = saved_policy(saved)
    steps = real_observations(cfg)
    policy.parts.use_mode(False)  # the exported layers act as evaluation does (BatchNorm statistics, no Dropout)
    acting = policy.export_actor(action_mask=_has_action_mask(steps[0][0]))
    policy.cfg.eval.update(acting.eval_overrides)
    bounds = env_interface(cfg).bounds if acting.is_policy else None
    network: torch.nn.Module = WithEnvActions(acting, None if bounds is None else EnvActionScale(
        bounds.policy_low, bounds.policy_high, bounds.env_low, bounds.scale)).eval()
    network.requires_grad_(False)  # the file's outputs convert to numpy as they come, without torch.no_grad
    cases = _policy_cases(policy, acting, steps, bounds) if acting.is_policy else _network_cases(acting, steps)
    if obs_dtype is not None and obs_dtype != cases[0][0][0].dtype:
        network = CastObservation(network, cases[0][0][0].dtype).eval()
        cases = [((inputs[0].to(obs_dtype), *inputs[1:]), expected) for inputs, expected in cases]
    path = Path(output) if output is not None else saved.run_dir / 'export' / f'policy{FORMATS[format]}'
    with torch.no_grad():
        # traced on a few rows, checked on all: the batch axis stays free
        example = tuple(x[:PARITY_ENVS] for x in cases[0][0])
        exported, parity = write_exported(network, format, path, example, acting.input_names, acting.output_names,
                                          lambda run: _check(run, cases, acting, TOLERANCES[format]))
    return ExportResult(path, format, saved.checkpoint, exported, parity, _notes(acting, bounds))


def _notes(acting: ActingNetwork, bounds: Optional[ActionBounds]) -> tuple[str, ...]:
    """What the file does besides the network's layers, one line each."""
    notes = []
    normalizer = acting.obs_normalizer
    if isinstance(normalizer, FrozenNormalizer):
        notes.append(f"observations normalised by the checkpoint's running mean and std (frozen), clipped to "
                     f"+-{normalizer.clip:g}")
    if bounds is not None:
        notes.append(f'actions clipped to [{_values(bounds.policy_low)}, {_values(bounds.policy_high)}], then mapped '
                     f"onto the env's bounds [{_values(bounds.env_low)}, {_values(bounds.env_high)}]")
    if acting.note:
        notes.append(acting.note)
    return tuple(notes)


def _values(array: np.ndarray) -> str:
    """A bound as one number where it is the same for every action dim."""
    flat = np.unique(np.asarray(array))
    return f'{float(flat[0]):g}' if flat.size == 1 else np.array2string(np.asarray(array), precision=3)


# ----- real observations and what the eval mode does with them -----------------------------------

Step = tuple[Any, np.ndarray]  # (observation batch of the envs, which of them ended their episode there)


def real_observations(cfg: EasyDict) -> list[Step]:
    """PARITY_ENVS of the config's envs, reset and stepped with uniform random (allowed) actions for
    PARITY_STEPS steps."""
    manager = build_env_manager(cfg, 'evaluator', num_envs=PARITY_ENVS, label='export')
    rng = np.random.default_rng(cfg.seed)
    try:
        obs = manager.reset(seed=cfg.seed + EVALUATOR_SEED_OFFSET)
        steps: list[Step] = []
        for _ in range(PARITY_STEPS):
            actions = _allowed_random_actions(obs, rng) if _has_action_mask(obs) else manager.sample_actions()
            step = manager.step(actions)
            steps.append((tree_map(np.array, obs), step.done.copy()))
            obs = step.obs
        return steps
    finally:
        manager.close()


def _has_action_mask(obs: Any) -> bool:
    return isinstance(obs, dict) and 'action_mask' in obs


def _allowed_random_actions(obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """A uniform draw among the actions each mask [N, (agents,) A] allows, as the allowed action with the largest
    uniform number (action 0 where it allows none)."""
    mask = np.asarray(obs['action_mask']).astype(bool)
    return np.where(mask, rng.random(mask.shape), -1.0).argmax(axis=-1)


Case = tuple[tuple[torch.Tensor, ...], tuple[np.ndarray, ...]]  # (inputs, expected outputs)


def _policy_cases(policy: Policy, acting: ActingNetwork, steps: list[Step], bounds: Optional[ActionBounds]
                  ) -> list[Case]:
    """The eval mode's outputs on the observations: one batch of all of them, or step by step, with the
    eval mode's own acting state fed in, where the network takes state (TAAC's previous trajectory)."""
    eval_mode = policy.eval_mode
    eval_mode.reset(None)
    observations = [to_tensor(obs, policy.device) for obs, _ in steps]
    stateful = any(_input(name, observations[0], None) is None for name in acting.input_names)
    if not stateful:
        observations, dones = [concat(observations)], [np.zeros(0, dtype=bool)]
    else:
        dones = [done for _, done in steps]
    cases = []
    for obs, done in zip(observations, dones):
        out = eval_mode.forward(obs)
        inputs = tuple(_input(name, obs, out) for name in acting.input_names)
        action = out['action'].cpu().numpy()
        expected = (action if bounds is None else bounds.env_action(action),
                    *(out[name].cpu().numpy() for name in acting.output_names[1:]))
        cases.append((tuple(_found(x) for x in inputs), expected))
        if done.any():
            eval_mode.reset(np.flatnonzero(done).tolist())
    return cases


def _input(name: str, obs: Any, eval_output: Optional[dict[str, Any]]) -> Optional[torch.Tensor]:
    """The network input `name` of a batch: its observation ('obs'), another entry of a dict observation
    ('action_mask', 'agent_state'), else the eval mode's acting state of that name (None before it acted)."""
    if name == 'obs':
        return split_action_mask(obs)[0]
    if isinstance(obs, dict) and name in obs:
        return obs[name]
    return None if eval_output is None else eval_output[name]


def _found(tensor: Optional[torch.Tensor]) -> torch.Tensor:
    assert tensor is not None, 'every input is found once the eval mode acted'
    return tensor


def _network_cases(acting: ActingNetwork, steps: list[Step]) -> list[Case]:
    """A network that is no policy says itself what it must give on the observations."""
    assert acting.parity is not None, 'an exported network that is no policy needs its parity case'
    observation = split_action_mask(concat([to_tensor(obs, torch.device('cpu')) for obs, _ in steps]))[0]
    inputs, expected = acting.parity(torch.as_tensor(observation))
    return [(inputs, tuple(value.cpu().numpy() for value in expected))]


def _check(run: Any, cases: list[Case], acting: ActingNetwork, tolerance: float) -> Parity:
    """Run the exported file on every case; a mismatch is one line."""
    worst, count, exact = 0.0, 0, True
    for inputs, expected in cases:
        count += int(inputs[0].shape[0])
        for name, got, want in zip(acting.output_names, run(inputs), expected):
            got = np.asarray(got)
            if got.shape != want.shape:
                raise TidalError(f"exported output '{name}' has shape {got.shape}, the eval mode's {want.shape}")
            if np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
                differ = int((got != want).sum())
                if differ:
                    raise TidalError(f"exported policy does not match the eval mode: {differ} of {want.size} values "
                                     f"of '{name}' differ (discrete outputs must be equal)")
                continue
            exact = False
            diff = np.abs(got.astype(np.float64) - want)
            worst = max(worst, float(diff.max(initial=0.0)))
            allowed = tolerance * np.maximum(1.0, np.abs(want))
            if (diff > allowed).any():
                raise TidalError(f"exported policy does not match the eval mode: max |difference| of '{name}' is "
                                 f"{float(diff.max()):.3g} > {tolerance:g}")
    return Parity(worst, count, exact, tolerance, 'eval mode' if acting.is_policy else 'model')


def _size(size: int) -> str:
    return f'{size / 1024:.1f} KiB' if size < 1024 ** 2 else f'{size / 1024 ** 2:.1f} MiB'
