"""The PettingZoo adapter: env type 'pettingzoo' wraps a parallel-API multi-agent env as one gymnasium env.

Each step sees all agents at once, in the order of `possible_agents`, so the env managers, collectors
and replay buffers handle it like any other env. Observations are dicts:
- `agent_state` [agents, obs]: each agent's observation, zero-padded to the largest;
- `global_state` [global]: the env's `state()`, or the agents' observations concatenated if it has none;
- `action_mask` [agents, actions] (discrete actions): the env's own masks, else all ones over each
  agent's actions; an agent whose episode is over may only take action 0, which is ignored.
The reward the policy learns from is one per agent (`info['reward_vector']`). By default
(`team_reward=False`) each agent gets its own reward, as the PettingZoo env gives it (zero once the agent
is done); with `team_reward` every agent, done or not, gets the team's reward, the sum of those, which is
what DI-engine's PettingZoo env always does (it reports that sum as the one reward of the step).
`reward_scale` then multiplies the vector. The scalar reward, which episode and eval returns add up, is the sum of the env's
own per-agent rewards either way, so returns compare across both options. The episode is terminated when
every agent has terminated and truncated when any agent is truncated (or all are gone otherwise).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Optional

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces

from tidal.base.defaults import FreeDict
from tidal.envs.gym_env import GymEnv
from tidal.base.errors import EnvError
from tidal.registry import ENV_REGISTRY


class ParallelEnvAdapter(gymnasium.Env):
    """One PettingZoo parallel env behind gymnasium's single-env interface."""

    metadata: dict = {'render_modes': []}

    def __init__(self, parallel_env: Any, team_reward: bool = False, reward_scale: float = 1.0) -> None:
        self.parallel_env = parallel_env
        self.team_reward, self.reward_scale = team_reward, reward_scale
        self.agents = list(parallel_env.possible_agents)
        self.agent_num = len(self.agents)
        obs_spaces = [_observation_part(parallel_env.observation_space(agent)) for agent in self.agents]
        self._obs_sizes = [int(np.prod(space.shape)) for space in obs_spaces]
        self.agent_obs_dim = max(self._obs_sizes)
        action_spaces = [parallel_env.action_space(agent) for agent in self.agents]
        self.discrete = all(isinstance(space, gym_spaces.Discrete) for space in action_spaces)
        if self.discrete:
            self._action_counts = np.array([int(space.n) for space in action_spaces])
            self._action_starts = [int(space.start) for space in action_spaces]
            self.action_dim = int(self._action_counts.max())
            action_space: gymnasium.Space = gym_spaces.MultiDiscrete([self.action_dim] * self.agent_num)
        elif all(isinstance(space, gym_spaces.Box) and len(space.shape) == 1 for space in action_spaces) and \
                len({space.shape for space in action_spaces}) == 1:
            self.action_dim = int(action_spaces[0].shape[0])
            action_space = gym_spaces.Box(np.stack([space.low for space in action_spaces]).astype(np.float32),
                                          np.stack([space.high for space in action_spaces]).astype(np.float32))
        else:
            raise EnvError(f'the agents of {_env_name(parallel_env)} need Discrete actions, or 1-D Box actions '
                           f'of one size; got {action_spaces}')
        self._state_space = _state_space(parallel_env)
        global_dim = int(np.prod(self._state_space.shape)) if self._state_space is not None \
            else self.agent_num * self.agent_obs_dim
        self.global_obs_dim = global_dim
        observation: dict[str, gymnasium.Space] = {
            'agent_state': gym_spaces.Box(-np.inf, np.inf, (self.agent_num, self.agent_obs_dim), np.float32),
            'global_state': gym_spaces.Box(-np.inf, np.inf, (global_dim,), np.float32),
        }
        if self.discrete:
            observation['action_mask'] = gym_spaces.MultiBinary((self.agent_num, self.action_dim))
        self.observation_space = gym_spaces.Dict(observation)
        self.action_space = action_space
        self._done = np.zeros(self.agent_num, dtype=bool)      # the agent's episode is over
        self._terminated = np.zeros(self.agent_num, dtype=bool)

    # ----- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        observations, infos = self.parallel_env.reset(seed=seed, options=options)
        self._done[:] = False
        self._terminated[:] = False
        obs = self._observe(observations, infos, no_op_only=self._done)
        return obs, {'reward_vector': np.zeros(self.agent_num, dtype=np.float32)}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        live = set(self.parallel_env.agents)
        actions = {agent: self._agent_action(i, action[i]) for i, agent in enumerate(self.agents) if agent in live}
        observations, rewards, terminations, truncations, infos = self.parallel_env.step(actions)
        reward = np.array([0.0 if self._done[i] else float(rewards.get(agent, 0.0))
                           for i, agent in enumerate(self.agents)], dtype=np.float32)
        truncated_now = np.array([bool(truncations.get(agent, False)) for agent in self.agents])
        for i, agent in enumerate(self.agents):
            if terminations.get(agent, False):
                self._terminated[i] = True
            if self._terminated[i] or truncated_now[i] or agent not in self.parallel_env.agents:
                self._done[i] = True
        terminated = bool(self._terminated.all())
        truncated = not terminated and bool(truncated_now.any() or self._done.all())
        # a truncated agent's state still has a value to bootstrap from: it keeps its actions
        obs = self._observe(observations, infos, no_op_only=self._done & ~truncated_now)
        return obs, float(reward.sum()), terminated, truncated, {'reward_vector': self._learned_reward(reward)}

    def close(self) -> None:
        self.parallel_env.close()

    # ----- helpers -------------------------------------------------------------------------------
    def _learned_reward(self, reward: np.ndarray) -> np.ndarray:
        """The per-agent rewards [agents] the policy learns from: each agent's own, or (team_reward) their sum
        for every agent, times reward_scale."""
        learned = np.full_like(reward, reward.sum()) if self.team_reward else reward
        return learned * np.float32(self.reward_scale) if self.reward_scale != 1.0 else learned

    def _agent_action(self, index: int, action: Any) -> Any:
        if self.discrete:
            return int(action) + self._action_starts[index]
        return np.asarray(action, dtype=np.float32)

    def _observe(self, observations: dict, infos: dict, no_op_only: np.ndarray) -> dict[str, np.ndarray]:
        """The obs dict; agents without an observation (done before this step) get zeros, and those in
        `no_op_only` may take only action 0."""
        agent_state = np.zeros((self.agent_num, self.agent_obs_dim), dtype=np.float32)
        mask = np.zeros((self.agent_num, self.action_dim), dtype=np.int8) if self.discrete else None
        for i, agent in enumerate(self.agents):
            raw = observations.get(agent)
            if raw is not None:
                part = raw['observation'] if isinstance(raw, dict) else raw
                agent_state[i, :self._obs_sizes[i]] = np.asarray(part, dtype=np.float32).reshape(-1)
            if mask is not None:
                mask[i] = self._agent_mask(i, raw, infos.get(agent) or {}, bool(no_op_only[i]))
        obs = {'agent_state': agent_state, 'global_state': self._global_state(agent_state)}
        if mask is not None:
            obs['action_mask'] = mask
        return obs

    def _agent_mask(self, index: int, raw: Any, info: dict, no_op_only: bool) -> np.ndarray:
        """The agent's legal actions: only the no-op 0 once its episode is over, else the env's mask (in its
        observation dict or info) or all of its actions."""
        row = np.zeros(self.action_dim, dtype=np.int8)
        if no_op_only:
            row[0] = 1
            return row
        given = raw.get('action_mask') if isinstance(raw, dict) else info.get('action_mask')
        count = int(self._action_counts[index])
        row[:count] = 1 if given is None else np.asarray(given, dtype=np.int8).reshape(-1)[:count]
        return row

    def _global_state(self, agent_state: np.ndarray) -> np.ndarray:
        if self._state_space is None:
            return agent_state.reshape(-1).copy()
        return np.asarray(self.parallel_env.state(), dtype=np.float32).reshape(-1)


def _observation_part(space: gymnasium.Space) -> gym_spaces.Box:
    """An agent's observation space, or the 'observation' part of a dict one (that also holds a mask)."""
    if isinstance(space, gym_spaces.Dict) and 'observation' in space.spaces:
        space = space['observation']
    if not isinstance(space, gym_spaces.Box):
        raise EnvError(f'expected Box agent observations (or a Dict with an "observation" Box), got {space}')
    return space


def _state_space(parallel_env: Any) -> Optional[gym_spaces.Box]:
    """The env's global state space, or None if it has no `state()`."""
    try:
        space = parallel_env.state_space
    except (AttributeError, NotImplementedError):
        return None
    return space if isinstance(space, gym_spaces.Box) else None


def _env_name(parallel_env: Any) -> str:
    return str(getattr(parallel_env, 'metadata', {}).get('name', type(parallel_env).__name__))


@ENV_REGISTRY.register('pettingzoo')
class PettingZooEnv(GymEnv):
    """Creates copies of one PettingZoo parallel env, adapted (`ParallelEnvAdapter`) and wrapped like 'gym'
    envs, and tells the multi-agent model its shapes."""

    config: dict = dict(
        # (str) Module of a PettingZoo env whose `parallel_env` builds it, e.g. 'mpe2.simple_spread_v3'.
        env_id='',
        # Keyword arguments for the module's parallel_env (e.g. N, max_cycles, continuous_actions).
        env_kwargs=FreeDict(),
        # (bool) Give every agent the team's reward, the sum of all agents' rewards, as DI-engine's PettingZoo
        # env does; False: each agent learns from its own reward. Episode returns are the sum either way.
        team_reward=False,
        # (float > 0) Multiplies the per-agent rewards the policy learns from (not the episode returns). 2.0 with
        # team_reward is DI-engine's simple_spread reward: it gives each agent global + local reward, mpe2's
        # simple_spread_v3 (local_ratio=0.5) half of each.
        reward_scale=1.0,
    )

    def infer_shapes(self) -> dict:
        """The multi-agent model's `policy.model` keys, as plain Python values for the config."""
        env = self._make_raw()
        try:
            return dict(agent_num=env.agent_num, agent_obs_shape=env.agent_obs_dim, global_obs_shape=env.global_obs_dim,
                        action_shape=env.action_dim, action_space='discrete' if env.discrete else 'continuous')
        finally:
            env.close()

    def _make_raw(self, render_mode: Optional[str] = None) -> ParallelEnvAdapter:
        """The adapter renders nothing (its metadata says so), whatever `render_mode` asks."""
        kwargs = dict(self.cfg.env_kwargs or {})
        try:
            parallel_env = self._parallel_env_fn()(**kwargs)
        except TypeError as err:
            raise EnvError(f"env.env_kwargs {kwargs} do not fit PettingZoo env '{self.env_id}': {err}") from err
        return ParallelEnvAdapter(parallel_env, bool(self.cfg.team_reward), float(self.cfg.reward_scale))

    def _parallel_env_fn(self) -> Callable[..., Any]:
        env_id = self.env_id
        if not env_id:
            raise EnvError('env.env_id is not set')
        try:
            module = importlib.import_module(env_id)
        except ImportError as err:
            raise EnvError(f"PettingZoo env '{env_id}' (env.env_id) cannot be imported: {err} (the extra "
                           f"'marl' installs mpe2 and pettingzoo)") from err
        parallel_env = getattr(module, 'parallel_env', None)
        if not callable(parallel_env):
            raise EnvError(f"module '{env_id}' (env.env_id) has no parallel_env(); name a PettingZoo env module "
                           f"such as 'mpe2.simple_spread_v3'")
        return parallel_env
