"""Pendulum-v1 variants that go wrong at one step, registered as gymnasium ids on import.

Used with `tidal train CONFIG --import faulty_envs --set env.env_id=<id>` (this folder on PYTHONPATH).
Each env instance counts its own steps across episodes; the fault happens on step FAULT_STEP (1-based):

- FaultyPendulumNanObs-v0: the observation returned by that step holds a NaN;
- FaultyPendulumNanReward-v0: the reward of that step is NaN;
- FaultyPendulumRaise-v0: step raises RuntimeError.
"""
import gymnasium
import numpy as np

FAULT_STEP = 50
IDS = {
    'nan_obs': 'FaultyPendulumNanObs-v0',
    'nan_reward': 'FaultyPendulumNanReward-v0',
    'raise': 'FaultyPendulumRaise-v0',
}


class FaultyStep(gymnasium.Wrapper):
    """Passes steps through until step FAULT_STEP, where it injects `fault`."""

    def __init__(self, env: gymnasium.Env, fault: str) -> None:
        super().__init__(env)
        self.fault = fault
        self.steps = 0

    def step(self, action):
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.steps == FAULT_STEP:
            if self.fault == 'nan_obs':
                obs = np.array(obs, copy=True)
                obs[0] = np.nan
            elif self.fault == 'nan_reward':
                reward = float('nan')
            elif self.fault == 'raise':
                raise RuntimeError(f'simulated env failure at step {self.steps}')
        return obs, reward, terminated, truncated, info


def make(fault: str, **kwargs) -> gymnasium.Env:
    return FaultyStep(gymnasium.make('Pendulum-v1', **kwargs), fault)


for _fault, _env_id in IDS.items():
    if _env_id not in gymnasium.envs.registry:
        gymnasium.register(id=_env_id, entry_point=make, kwargs={'fault': _fault}, disable_env_checker=True)
