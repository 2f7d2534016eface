"""The tables of DI-engine compatibility: DI-engine env type -> gymnasium id, DI-engine key -> what tidal does.

`dingcompat.translate` applies them; the README's tables are `markdown_tables()`, so the two cannot drift.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tidal.base.errors import ConfigError


# ----- env types ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DingEnv:
    """How tidal makes one DI-engine env type: the gymnasium id, or '' for the config's own `env.env_id`."""

    env_id: str
    note: str
    env_kwargs: tuple[tuple[str, Any], ...] = ()


ENV_TYPES: dict[str, DingEnv] = {
    'pendulum': DingEnv('Pendulum-v1', 'as in DI-engine'),
    'cartpole': DingEnv('CartPole-v1', "DI-engine makes CartPole-v0, whose 200-step episodes its configs' "
                                       "stop_value 195 assumes; v1 capped at 200 steps is that env",
                        (('max_episode_steps', 200),)),
    'lunarlander': DingEnv('LunarLander-v3', "gymnasium's current version; `env.continuous=True` or env_id "
                                             "'LunarLanderContinuous-v2' sets env_kwargs.continuous=True"),
    'bipedalwalker': DingEnv('BipedalWalker-v3', '`env.hardcore=True` sets env_kwargs.hardcore=True'),
    'mountain_car': DingEnv('MountainCar-v0', 'as in DI-engine (discrete actions)'),
    'acrobot': DingEnv('Acrobot-v1', 'as in DI-engine'),
    'mujoco': DingEnv('', "the config's env.env_id at gymnasium's current version: 'Hopper-v3' -> 'Hopper-v5'"),
    'atari': DingEnv('', "refused: DI-engine's Atari wrappers (no-op reset, max-and-skip, episodic life, "
                         "fire reset, 84x84 grey frames, reward clipping, 4-frame stack) have no counterpart in "
                         "tidal's gym adapter"),
}

#: Old gym ids in DI-engine configs -> (gymnasium id, env_kwargs they imply).
OLD_ENV_IDS: dict[str, tuple[str, dict]] = {
    'Pendulum-v0': ('Pendulum-v1', {}),
    'CartPole-v0': ('CartPole-v1', {'max_episode_steps': 200}),
    'LunarLander-v2': ('LunarLander-v3', {}),
    'LunarLanderContinuous-v2': ('LunarLander-v3', {'continuous': True}),
    'LunarLanderContinuous-v3': ('LunarLander-v3', {'continuous': True}),
    'BipedalWalker-v2': ('BipedalWalker-v3', {}),
    'BipedalWalkerHardcore-v3': ('BipedalWalker-v3', {'hardcore': True}),
}
MUJOCO_ID = re.compile(r'(Ant|HalfCheetah|Hopper|Humanoid|HumanoidStandup|InvertedDoublePendulum|'
                       r'InvertedPendulum|Pusher|Reacher|Swimmer|Walker2d)-v[0-4]')


# ----- keys --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyRule:
    """What happens to one DI-engine key of main_config.

    `convert` maps the value to {tidal key path: value}, returns None to keep the key as it is (a value
    tidal reads the same way), or raises ConfigError for a value tidal cannot honour.
    """

    path: str
    action: str  # 'rename', 'convert' or 'ignore'
    target: str = ''
    why: str = ''
    convert: Optional[Callable[[Any, dict], Optional[dict]]] = None


def _cuda(value: Any, main: dict) -> Optional[dict]:
    """cuda=True without a policy.device: DI-engine's meaning, CUDA when available. Beside a device, or False,
    it is tidal's own `cuda` key."""
    policy = main.get('policy')
    return {'policy.device': 'auto'} if value is True and not (isinstance(policy, dict) and 'device' in policy) \
        else None


def _one_step(value: Any, main: dict) -> Optional[dict]:
    if value != 1:
        raise ConfigError(f"policy.nstep={value!r}: tidal's SAC learns from 1-step TD targets; set policy.nstep=1 "
                          f"or remove it")
    return {}


def _no_value_network(value: Any, main: dict) -> Optional[dict]:
    if value:
        raise ConfigError("policy.learn.value_network=True: SAC with a state-value network is tidal's policy type "
                          "'sac_v'; set create_config.policy.type='sac_v' and remove the key")
    return {}


def _clip_norm(value: Any, main: dict) -> Optional[dict]:
    if value != 'clip_norm':
        raise ConfigError(f"policy.learn.grad_clip_type={value!r}: tidal clips the gradient norm only "
                          f"('clip_norm', with learn.grad_clip_value as policy.learn.grad_clip_norm)")
    return {}


def _continuous(value: Any, main: dict) -> Optional[dict]:
    return {'env.env_kwargs.continuous': bool(value)}


def _hardcore(value: Any, main: dict) -> Optional[dict]:
    return {'env.env_kwargs.hardcore': bool(value)}


SIZES_WHY = ("the same layers as DI-engine's: encoder_hidden_size_list (or one input layer), then head_layer_num "
             "more of head_hidden_size")
_SIZES_README = (SIZES_WHY + "; PPO's actor_critic gets them as policy.model.encoder_hidden_sizes (its critic "
                 "layout must equal the actor's); keys left out take DI-engine's defaults (64, 1 layer; PPO's "
                 "encoder [128, 128, 64])")

KEY_RULES: tuple[KeyRule, ...] = (
    # env
    KeyRule('env.act_scale', 'rename', 'env.normalize_action', 'the policy acts in [-1, 1], rescaled to the bounds'),
    KeyRule('env.use_act_scale', 'rename', 'env.normalize_action', 'the policy acts in [-1, 1], rescaled to the '
                                                                   'bounds'),
    KeyRule('env.continuous', 'convert', 'env.env_kwargs.continuous', "an argument of gymnasium's LunarLander",
            _continuous),
    KeyRule('env.hardcore', 'convert', 'env.env_kwargs.hardcore', "an argument of gymnasium's BipedalWalker",
            _hardcore),
    KeyRule('env.manager', 'ignore', why="tidal's env managers take no options; pick one with "
                                         "create_config.env_manager.type ('base' or 'subprocess')"),
    KeyRule('env.norm_obs', 'ignore', why="an option of DI-engine's MuJoCo wrapper; tidal's PPO normalizes "
                                          "observations with policy.normalize.obs"),
    KeyRule('env.norm_reward', 'ignore', why="an option of DI-engine's MuJoCo wrapper; tidal's PPO scales rewards "
                                             "with policy.normalize.reward"),
    KeyRule('env.rew_clip', 'ignore', why='tidal does not clip rewards'),
    KeyRule('env.replay_path', 'ignore', why='tidal records no episode videos'),
    # policy
    KeyRule('policy.cuda', 'convert', 'policy.device', "cuda=True (without policy.device) is CUDA when available, "
                                                      "as in DI-engine; False is tidal's own key", _cuda),
    KeyRule('policy.multi_gpu', 'ignore', why='several learner processes run under torchrun (README: Several learner processes)'),
    KeyRule('policy.on_policy', 'ignore', why="tidal picks the pipeline from the policy type"),
    KeyRule('policy.transition_with_policy_data', 'ignore', why="each policy's process_transition decides what a "
                                                                "transition keeps"),
    KeyRule('policy.action_space', 'ignore', why="the env's action space decides it (policy.model.action_space is "
                                                 "filled from the env)"),
    KeyRule('policy.recompute_adv', 'ignore', why='tidal computes GAE once per rollout, before the epochs'),
    KeyRule('policy.nstep', 'convert', '', "tidal's SAC uses 1-step TD targets (other values are refused)",
            _one_step),
    KeyRule('policy.discount_factor', 'ignore', why="DI-engine's SAC reads learn.discount_factor, as tidal does"),
    KeyRule('policy.expert_random_collect_size', 'ignore', why="tidal's SQIL reads demonstrations from "
                                                               "policy.expert_data_path (tidal collect-demos)"),
    KeyRule('policy.command', 'ignore', why='DI-engine command-mode settings; tidal has no command mode'),
    KeyRule('policy.model.actor_head_hidden_size', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README),
    KeyRule('policy.model.actor_head_layer_num', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README),
    KeyRule('policy.model.critic_head_hidden_size', 'convert', 'policy.model.critic_hidden_sizes', _SIZES_README),
    KeyRule('policy.model.critic_head_layer_num', 'convert', 'policy.model.critic_hidden_sizes', _SIZES_README),
    KeyRule('policy.model.encoder_hidden_size_list', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README),
    KeyRule('policy.model.actor_head_type', 'ignore', why="tidal's SAC actor is always a reparameterized "
                                                          "tanh-Gaussian"),
    KeyRule('policy.model.sigma_type', 'ignore', why="tidal's PPO Gaussian has a learned, state-independent log std"),
    KeyRule('policy.model.bound_type', 'ignore', why="tidal's PPO clips its Gaussian actions to the env's bounds"),
    KeyRule('policy.learn.value_network', 'convert', '', "False is tidal's 'sac'; True is policy type 'sac_v'",
            _no_value_network),
    KeyRule('policy.learn.reparameterization', 'ignore', why="tidal's SAC always uses the reparameterization trick"),
    KeyRule('policy.learn.multi_gpu', 'ignore', why='several learner processes run under torchrun (README: Several learner processes)'),
    KeyRule('policy.learn.value_norm', 'ignore', why="tidal's PPO does not normalize value targets (see "
                                                     "policy.normalize.reward)"),
    KeyRule('policy.learn.ppo_param_init', 'rename', 'policy.model.orthogonal_init', 'orthogonal init of the '
                                                                                   "actor-critic's layers"),
    KeyRule('policy.learn.grad_clip_type', 'convert', '', "tidal clips the global gradient norm "
                                                         "(learn.grad_clip_norm), which 'clip_norm' names; other "
                                                         "types are refused", _clip_norm),
    KeyRule('policy.learn.grad_clip_value', 'rename', 'policy.learn.grad_clip_norm', 'the global gradient norm'),
    KeyRule('policy.learn.learner.hook.log_show_after_iter', 'rename', 'policy.learn.learner.log_freq',
            'train iterations between log lines'),
    KeyRule('policy.learn.learner.hook.save_ckpt_after_iter', 'rename', 'policy.learn.learner.save_ckpt_freq',
            'train iterations between checkpoints'),
    KeyRule('policy.learn.learner.hook.load_ckpt_before_run', 'ignore', why='continue a run with tidal resume RUN_DIR'),
    KeyRule('policy.collect.noise_sigma', 'ignore', why='SAC explores by sampling its own Gaussian'),
    KeyRule('policy.collect.collector_logit', 'ignore', why="each policy's process_transition decides what a "
                                                            "transition keeps"),
    KeyRule('policy.collect.model_path', 'ignore', why="tidal's SQIL reads demonstrations recorded with tidal "
                                                       "collect-demos from policy.expert_data_path"),
    KeyRule('policy.collect.env_num', 'ignore', why='env.collector_env_num sets it'),
    KeyRule('policy.collect.collector', 'ignore', why="DI-engine collector options; tidal's collector takes none"),
    KeyRule('policy.eval.env_num', 'ignore', why='env.evaluator_env_num sets it'),
    KeyRule('policy.eval.evaluator.n_episode', 'rename', 'env.n_evaluator_episode', 'episodes per evaluation'),
    KeyRule('policy.other.replay_buffer.max_use', 'ignore', why="tidal's buffer overwrites the oldest data only"),
    KeyRule('policy.other.replay_buffer.max_staleness', 'ignore', why="tidal's buffer overwrites the oldest data "
                                                                      "only"),
    KeyRule('policy.other.replay_buffer.deepcopy', 'ignore', why="tidal's buffer stores columns, never objects"),
    KeyRule('policy.other.replay_buffer.enable_track_used_data', 'ignore', why="tidal's buffer does not track use"),
    KeyRule('policy.other.replay_buffer.periodic_thruput_seconds', 'ignore', why="tidal's buffer logs no throughput"),
)

#: Keys DI-engine and tidal spell and read the same way (listed in the README only).
SAME_KEYS = ('exp_name', 'seed', 'env.collector_env_num', 'env.evaluator_env_num', 'env.n_evaluator_episode',
             'env.stop_value', 'policy.priority', 'policy.priority_IS_weight', 'policy.random_collect_size',
             'policy.model.obs_shape', 'policy.model.action_shape', 'policy.model.twin_critic',
             'policy.model.share_encoder', 'policy.learn.update_per_collect', 'policy.learn.batch_size',
             'policy.learn.learning_rate_q', 'policy.learn.learning_rate_policy', 'policy.learn.learning_rate_alpha',
             'policy.learn.target_theta', 'policy.learn.discount_factor', 'policy.learn.alpha',
             'policy.learn.auto_alpha', 'policy.learn.target_entropy', 'policy.learn.init_w',
             'policy.learn.ignore_done', 'policy.learn.epoch_per_collect', 'policy.learn.learning_rate',
             'policy.learn.clip_ratio', 'policy.learn.value_weight', 'policy.learn.entropy_weight',
             'policy.learn.adv_norm', 'policy.collect.n_sample', 'policy.collect.unroll_len',
             'policy.collect.discount_factor', 'policy.collect.gae_lambda', 'policy.eval.evaluator.eval_freq',
             'policy.other.replay_buffer.replay_buffer_size')


# ----- README ----------------------------------------------------------------------------------------
def markdown_tables() -> str:
    """The README's tables of DI-engine env types and keys, generated from ENV_TYPES and KEY_RULES."""
    lines = ['| DI-engine env type | tidal (env type `gym`) `env.env_id` | note |', '|---|---|---|']
    for name, env in ENV_TYPES.items():
        kwargs = ''.join(f', `env_kwargs.{key}={value!r}`' for key, value in env.env_kwargs)
        lines.append(f"| `{name}` | {f'`{env.env_id}`' if env.env_id else '-'}{kwargs} | {env.note} |")
    lines += ['', '| DI-engine key | tidal | why |', '|---|---|---|']
    for rule in KEY_RULES:
        if rule.action == 'ignore':
            what = 'ignored'
        elif rule.target:
            what = f'`{rule.target}`' + (' (converted)' if rule.action == 'convert' else '')
        else:
            what = 'checked, then dropped'
        lines.append(f'| `{rule.path}` | {what} | {rule.why} |')
    lines.append("| `policy.model.action_space` | same key for PPO ('discrete', 'continuous'); QAC's "
                 "'reparameterization' is ignored | tidal's SAC actor is always a tanh-Gaussian |")
    lines += [f'| `{key}` | same key | |' for key in SAME_KEYS]
    return '\n'.join(lines) + '\n'
