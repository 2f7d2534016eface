"""Env classes whose state lives in a native object (a physics engine's data, an emulator), saved as plain data
through that library's own state API.

`snapshot.py` walks the wrapper chain and saves each layer's attributes; a layer of a class named here has
its native objects skipped there and saved by its `NativeState` instead. A class is recognised only when its
library is already imported, so a process that never made a MuJoCo or Atari env never imports mujoco or ale-py.
"""
from __future__ import annotations

import sys
from typing import Any, Protocol

import numpy as np


class NativeState(Protocol):
    """How one env class keeps its state in native objects."""

    # attributes that are not plain data: the native objects, and what is fixed when the env is made from them
    skipped: frozenset[str]

    def save(self, env: Any) -> dict[str, Any]:
        """The native state as numpy arrays and Python scalars."""

    def mismatch(self, env: Any, state: dict[str, Any]) -> str | None:
        """Why `state` cannot be loaded into `env` (another model or game), or None when it fits."""

    def load(self, env: Any, state: dict[str, Any]) -> None:
        """Put `state` back; called only after `mismatch` found none."""


class MujocoState:
    """gymnasium's MuJoCo envs: the full integration state (time, qpos, qvel, act, ctrl, applied forces, mocap,
    the solver's warm-start accelerations, ...) through `mj_getState` / `mj_setState`, and every quantity
    the last step derived from it (body poses, contact forces, sensor readings), which some envs read before
    their next step (Ant's and Humanoid's positions before the step). Arrays sized by the current contacts
    are recomputed by the next step before anything reads them, so only those of the saved size are put back.
    """

    skipped = frozenset({'model', 'data', 'mujoco_renderer'})

    def save(self, env: Any) -> dict[str, Any]:
        import mujoco
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        integration = np.empty(mujoco.mj_stateSize(env.model, spec), np.float64)
        mujoco.mj_getState(env.model, env.data, integration, spec)
        return {'model_signature': int(env.model.signature), 'integration': integration,
                'derived': {name: array.copy() for name, array in _data_arrays(env.data).items() if array.size}}

    def mismatch(self, env: Any, state: dict[str, Any]) -> str | None:
        if state['model_signature'] != int(env.model.signature):
            return 'its MuJoCo state is of another model'
        return None

    def load(self, env: Any, state: dict[str, Any]) -> None:
        import mujoco
        arrays = _data_arrays(env.data)
        for name, saved in state['derived'].items():
            if name in arrays and arrays[name].shape == saved.shape:
                arrays[name][...] = saved
        # the integration state goes in last, so it wins over any array the two share
        mujoco.mj_setState(env.model, env.data, state['integration'], mujoco.mjtState.mjSTATE_INTEGRATION)


def _data_arrays(data: Any) -> dict[str, np.ndarray]:
    """The array fields of an `MjData`: views into its memory, so writing into them writes the physics data."""
    arrays = {}
    for name in dir(data):
        if not name.startswith('_'):
            value = getattr(data, name)
            if isinstance(value, np.ndarray):
                arrays[name] = value
    return arrays


class AleState:
    """ale-py's Atari envs: the emulator's state with its random generator (sticky actions and the no-op
    starts draw from it), serialised by ALE to bytes."""

    skipped = frozenset({'ale', '_action_set'})  # the emulator, and the game's action list fixed with the ROM

    def save(self, env: Any) -> dict[str, Any]:
        emulator = env.ale.cloneState(include_rng=True).serialize()
        return {'game': env._game, 'emulator': np.frombuffer(emulator, np.uint8).copy()}

    def mismatch(self, env: Any, state: dict[str, Any]) -> str | None:
        if state['game'] != env._game:
            return f"its emulator state is of the game {state['game']!r}, not {env._game!r}"
        return None

    def load(self, env: Any, state: dict[str, Any]) -> None:
        import ale_py
        env.ale.restoreState(ale_py.ALEState(state['emulator'].tobytes()))


# (module, class, its native state): a layer is matched by isinstance, subclasses (Hopper, Pong) included
_NATIVE_CLASSES: list[tuple[str, str, NativeState]] = [
    ('gymnasium.envs.mujoco.mujoco_env', 'MujocoEnv', MujocoState()),
    ('ale_py.env', 'AtariEnv', AleState()),
]


def native_state(env: Any) -> NativeState | None:
    """The NativeState of `env`'s class, or None for an env whose state is all plain data."""
    for module_name, class_name, state in _NATIVE_CLASSES:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(env, getattr(module, class_name)):
            return state
    return None
