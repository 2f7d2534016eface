"""The tables of DI-engine compatibility: DI-engine env type -> tidal's env, DI-engine key -> what tidal does.

`translation.translate` applies them; the tables of docs/di-engine.md are `markdown_tables()`, so the two cannot
drift.
A rule names the tidal policy types it holds for, and holds for their registered subclasses too (a user's
`MySAC(SACPolicy)` registered as 'my_sac' is SAC to them): a key DI-engine reads for SAC means nothing to PPO,
so under PPO it stays an unknown key, as DI-engine's PPO would never read it either.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tidal.base.errors import ConfigError
from tidal.config.tree import value_at

SAC_FAMILY = ('sac', 'discrete_sac', 'sqil_sac', 'sac_v')
PPO_FAMILY = ('ppo', 'ppg')
DDPG_FAMILY = ('ddpg', 'td3')
DQN_FAMILY = ('dqn', 'sql', 'sqil')
#: The policies that learn from a dataset (DI-engine's serial_offline and serial_bc entries).
OFFLINE_FAMILY = ('bc', 'td3_bc', 'iql', 'cql', 'rebrac', 'discrete_cql')
#: The policies whose DI-engine models (QAC, DiscreteQAC, VAC, PPG) take DI-engine's actor/critic head layout.
LAYOUT_FAMILY = (*SAC_FAMILY, *DDPG_FAMILY, *PPO_FAMILY, 'a2c')


# ----- env types ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DingEnv:
    """How tidal makes one DI-engine env type: the env id ('' for the config's own `env.env_id`) of tidal's
    env type `tidal_type`; `refused` types stop with `note` as the reason."""

    env_id: str
    note: str
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    tidal_type: str = 'gym'
    refused: bool = False


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
    'petting_zoo': DingEnv('mpe2.simple_spread_v3', "tidal's env type 'pettingzoo'; DI-engine builds only MPE's "
                                                    "simple_spread (env_id 'simple_spread_v2'), with every agent "
                                                    "rewarded by the team: team_reward=True, reward_scale=2.0",
                           tidal_type='pettingzoo'),
    'atari': DingEnv('', "tidal's env type 'atari' reads DI-engine's keys (env_id 'PongNoFrameskip-v4', frame_stack) and "
                         "preprocesses as DI-engine's wrappers do (no-op reset, frame skip with max-pooling, episodic "
                         "life and reward clipping in the collector's envs only, FIRE after reset, 84x84 grey frames); "
                         "its frames stay uint8 and channel-last ([84, 84, 4]), scaled by the model (pixel_scale)",
                     tidal_type='atari'),
    'procgen': DingEnv('', "tidal has no Procgen env adapter", refused=True),
    'd4rl': DingEnv('', "D4RL's MuJoCo ids as gymnasium's env and the Minari dataset of the same env and level: "
                        "'hopper-medium-v2' (or -v0, -v1) -> env 'Hopper-v5', policy.collect.data_path "
                        "'mujoco/hopper/medium-v0' (on disk under MINARI_DATASETS_PATH: minari download, or "
                        "tidal build-datasets)"),
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
#: The file names of DI-engine's hdf5 datasets (its `hdf5_save` writes `<name>_demos.hdf5`).
HDF5_SUFFIXES = ('.hdf5', '.h5')
#: D4RL's MuJoCo locomotion datasets, whose Minari versions tidal maps them to: D4RL env name -> gymnasium's.
D4RL_ENVS = {'hopper': 'Hopper', 'halfcheetah': 'HalfCheetah', 'walker2d': 'Walker2d', 'ant': 'Ant'}
D4RL_ID = re.compile(r'(?P<env>[a-z0-9]+)-(?P<level>random|medium|expert|medium-replay|medium-expert|full-replay)'
                     r'-v[0-2]')
#: The levels of D4RL's locomotion datasets that Minari publishes as mujoco/ENV/LEVEL-v0 (it also has 'simple').
MINARI_PUBLISHED = ('medium', 'expert')
MUJOCO_ID = re.compile(r'(Ant|HalfCheetah|Hopper|Humanoid|HumanoidStandup|InvertedDoublePendulum|'
                       r'InvertedPendulum|Pusher|Reacher|Swimmer|Walker2d)-v[0-4]')
#: MuJoCo envs whose observation grew shorter since DI-engine's version: name -> (old size, why it may go).
MUJOCO_OBS = {'Ant': (111, "Ant-v3's 111 observations hold the world body's contact forces, always zero; Ant-v5 "
                           "drops them (105)")}
#: DI-engine's MPE ids -> mpe2's module of the same env at its current version.
MPE_IDS = {'simple_spread_v2': 'mpe2.simple_spread_v3', 'simple_spread_v3': 'mpe2.simple_spread_v3'}

#: DI-engine policy types tidal does not have -> what differs and what to run instead.
_OFFLINE_INSTEAD = "tidal's offline policies are bc, td3_bc, iql, cql, rebrac and discrete_cql"
POLICY_TYPES_REFUSED = {
    'ppg_offpolicy': "DI-engine's off-policy PPG replays the policy phase from a buffer; tidal's PPG is on-policy: "
                     "set create_config.policy.type='ppg' and run it with tidal -m serial_onpolicy",
    'bcq': f"tidal has no BCQ (its generative model of the dataset's actions); {_OFFLINE_INSTEAD}",
    'edac': f"tidal has no EDAC (its ensemble diversity term); {_OFFLINE_INSTEAD}",
    'dt': f"tidal has no Decision Transformer (a sequence model of returns to go); {_OFFLINE_INSTEAD}",
    'pd': f"tidal has no Plan Diffuser; {_OFFLINE_INSTEAD}",
    'qgpo': f"tidal has no QGPO (a diffusion policy); {_OFFLINE_INSTEAD}",
    'ibc': f"tidal has no implicit behaviour cloning (an energy model of actions); {_OFFLINE_INSTEAD}",
    'bco': f"tidal has no behaviour cloning from observation (it learns an inverse model online); "
           f"{_OFFLINE_INSTEAD}",
}

#: DI-engine's ConvEncoder: conv layers of these kernels and strides (the first entries of its
#: encoder_hidden_size_list as channels), then one linear layer of the list's last size.
DING_CONV_KERNELS, DING_CONV_STRIDES = (8, 4, 3), (4, 2, 1)

#: torch.nn activation classes DI-engine configs hold -> tidal's activation names.
ACTIVATIONS = {'ReLU': 'relu', 'Tanh': 'tanh', 'ELU': 'elu', 'GELU': 'gelu', 'SiLU': 'silu'}


# ----- keys --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyRule:
    """What happens to one DI-engine key of main_config under the policy types `policies` (empty: any).

    `convert` maps the value to {tidal key path: value}, returns None to keep the key as it is (a value
    tidal reads the same way), {} to drop a value that asks for tidal's behaviour, or raises ConfigError
    for a value tidal cannot honour.
    """

    path: str
    action: str  # 'rename', 'convert', 'ignore' or 'same' (read as it is: a row of the docs only)
    target: str = ''
    why: str = ''
    convert: Optional[Callable[[Any, dict], Optional[dict]]] = None
    policies: tuple[str, ...] = ()
    #: a key tidal reads too, with another meaning or spelling: rewritten in a DI-engine file only (one whose env
    #: type or import names are DI-engine's)
    ding_only: bool = False

    def holds_for(self, family: frozenset[str]) -> bool:
        """Whether the rule holds for a policy whose class and bases are registered under the names `family`."""
        return not self.policies or not family.isdisjoint(self.policies)


def _cuda(value: Any, main: dict) -> Optional[dict]:
    """cuda=True without a policy.device: DI-engine's meaning, CUDA when available. Beside a device, or False,
    it is tidal's own `cuda` key."""
    policy = main.get('policy')
    return {'policy.device': 'auto'} if value is True and not (isinstance(policy, dict) and 'device' in policy) \
        else None


def _only(path: str, accepted: Any, otherwise: str) -> Callable[[Any, dict], Optional[dict]]:
    """A converter that drops `accepted` (tidal's behaviour) and refuses any other value, saying `otherwise`."""
    def convert(value: Any, main: dict) -> Optional[dict]:
        if value != accepted and not (accepted is None and value in ('', None)):
            raise ConfigError(f"config key '{path}' is {value!r}: {otherwise}")
        return {}
    return convert


def _normalize(what: str) -> Callable[[Any, dict], Optional[dict]]:
    """DI-engine's `dict(use_norm=...)` of its MuJoCo wrapper -> tidal's policy.normalize.<what>."""
    def convert(value: Any, main: dict) -> Optional[dict]:
        if not isinstance(value, dict) or set(value) != {'use_norm'} or not isinstance(value['use_norm'], bool):
            raise ConfigError(f"config key 'env.norm_{what}' is {value!r}: DI-engine's MuJoCo wrapper takes "
                              f"dict(use_norm=True) or dict(use_norm=False)")
        return {f'policy.normalize.{what}': value['use_norm']}
    return convert


def _continuous(value: Any, main: dict) -> Optional[dict]:
    return {'env.env_kwargs.continuous': bool(value)}


def _hardcore(value: Any, main: dict) -> Optional[dict]:
    return {'env.env_kwargs.hardcore': bool(value)}


def _lr_schedule(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's LambdaLR steps once per collection, from the rate down to min_lr_lambda times it."""
    if value is None:
        return {}
    n_sample = main['policy'].get('collect', {}).get('n_sample')
    if not isinstance(value, dict) or set(value) != {'epoch_num', 'min_lr_lambda'} or value['min_lr_lambda'] != 0 \
            or not isinstance(n_sample, int):
        raise ConfigError(f"config key 'policy.learn.lr_scheduler' is {value!r}: tidal decays the learning rate "
                          f"linearly to 0 (dict(epoch_num=N, min_lr_lambda=0) with policy.collect.n_sample set, or "
                          f"policy.learn.lr_decay=True and policy.learn.decay_env_steps)")
    return {'policy.learn.lr_decay': True, 'policy.learn.decay_env_steps': value['epoch_num'] * n_sample}


def _kl_beta(value: Any, main: dict) -> Optional[dict]:
    """DI-engine adds its KL penalty only towards the policy at learn.pretrained_model_path."""
    if value != 0 and main['policy']['learn'].get('pretrained_model_path') not in (None, ''):
        raise ConfigError(f"config key 'policy.learn.kl_beta' is {value!r} with a pretrained_model_path: tidal's PPO "
                          f"has no KL penalty term")
    return {}


def _ppg_epochs(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's PPG runs actor and critic epochs apart; tidal's policy phase trains both in each epoch."""
    learn = main['policy']['learn']
    actor, critic = learn.get('actor_epoch_per_collect', 1), learn.get('critic_epoch_per_collect', 1)
    if actor != critic:
        raise ConfigError(f"config keys 'policy.learn.actor_epoch_per_collect' ({actor}) and "
                          f"'policy.learn.critic_epoch_per_collect' ({critic}) differ: tidal's PPG trains the policy "
                          f"and the value in the same epochs (policy.learn.epoch_per_collect); make them equal")
    return {'policy.learn.epoch_per_collect': value}


def _offline_norm_obs(value: Any, main: dict) -> Optional[dict]:
    """DI-engine normalises a dataset's observations by its own statistics only with offline_stats on."""
    if value in ({'use_norm': False}, {'use_norm': False, 'offline_stats': {'use_offline_stats': False}}):
        return {'policy.collect.normalize_states': False}
    if value == {'use_norm': True, 'offline_stats': {'use_offline_stats': True}}:
        return {'policy.collect.normalize_states': True}
    raise ConfigError(f"config key 'env.norm_obs' is {value!r}: an offline run normalises observations by its "
                      f"dataset's statistics (dict(use_norm=True, offline_stats=dict(use_offline_stats=True))) or "
                      f"not at all (dict(use_norm=False))")


#: DI-engine's env.reward_norm values -> tidal's policy.collect.reward_norm.
_REWARD_NORMS = {'iql_locomotion': 'return_range', 'normalize': 'standardize'}


def _reward_norm(value: Any, main: dict) -> Optional[dict]:
    if value not in _REWARD_NORMS:
        raise ConfigError(f"config key 'env.reward_norm' is {value!r}: tidal scales a dataset's rewards as "
                          f"{' or '.join(repr(name) for name in _REWARD_NORMS)} (the AntMaze shifts are not built)")
    return {'policy.collect.reward_norm': _REWARD_NORMS[value]}


def _data_type(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's dataset class: D4RL's by env id (env type 'd4rl'), or its hdf5 file at collect.data_path."""
    env_type = value_at(main, 'env.type')
    path = value_at(main, 'policy.collect.data_path')
    if value == 'd4rl':
        return {}  # the env type 'd4rl' names the dataset (translation._d4rl_env)
    if value == 'hdf5':
        if not isinstance(path, str) or not path.endswith(HDF5_SUFFIXES):
            raise ConfigError(f"config key 'policy.collect.data_path' is {path!r}, but policy.collect.data_type 'hdf5' "
                              f"reads a DI-engine hdf5 file ({' or '.join(HDF5_SUFFIXES)})")
        return {}
    if value == 'naive':
        raise ConfigError("config key 'policy.collect.data_type' is 'naive': tidal does not unpickle DI-engine's "
                          "transition lists; save them with DI-engine's hdf5_save and set data_type='hdf5'")
    raise ConfigError(f"config key 'policy.collect.data_type' is {value!r} (env type {env_type!r}): tidal reads "
                      f"'d4rl' (with env type 'd4rl') and 'hdf5' datasets")


#: Train iterations between an offline run's evaluations where a DI-engine file says "every pass" (eval_freq <= 0).
OFFLINE_EVAL_FREQ = 1000


def _offline_eval_freq(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's offline entry evaluates at most once per pass over the dataset, so eval_freq <= 0 evaluates after
    every pass; tidal evaluates every eval_freq train iterations, whatever a pass holds."""
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return {'policy.eval.evaluator.eval_freq': OFFLINE_EVAL_FREQ}
    return None


def _iql_beta(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's IQL weighs by exp(A / beta); tidal's, as the paper, by exp(beta A)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ConfigError(f"config key 'policy.learn.beta' must be a number > 0 (DI-engine's IQL divides the "
                          f"advantage by it), got {value!r}")
    return {'policy.learn.beta': 1.0 / value}


def _lagrange(value: Any, main: dict) -> Optional[dict]:
    """DI-engine's CQL tunes its penalty weight only with with_lagrange=True and lagrange_thresh > 0."""
    learn = main['policy']['learn']
    if learn.get('with_lagrange', False) and learn.get('lagrange_thresh', -1) > 0:
        raise ConfigError(f"config keys 'policy.learn.with_lagrange' (True) and 'policy.learn.lagrange_thresh' "
                          f"({learn['lagrange_thresh']}): tidal's CQL keeps a fixed penalty weight "
                          f"(policy.learn.cql_weight); the Lagrangian is not built")
    return {}


def _refuse_quantiles(value: Any, main: dict) -> Optional[dict]:
    raise ConfigError(f"config key 'policy.model.num_quantiles' is {value!r}: DI-engine's discrete CQL learns QR-DQN's "
                      f"quantiles; tidal's discrete_cql learns DQN's expected values (remove num_quantiles and "
                      f"learn.kappa to run it)")


def _bc_optimizer(value: Any, main: dict) -> Optional[dict]:
    names = {'SGD': 'sgd', 'Adam': 'adam'}
    if value not in names:
        raise ConfigError(f"config key 'policy.learn.optimizer' is {value!r}: DI-engine's BC takes 'SGD' or 'Adam'")
    return {'policy.learn.optimizer': names[value]}


def _weight_decay(value: Any, main: dict) -> Optional[dict]:
    """None is DI-engine's no decay (plain Adam)."""
    return {'policy.learn.weight_decay': 0.0 if value is None else value}


SIZES_WHY = ("the same layers as DI-engine's: encoder_hidden_size_list (or one input layer), then head_layer_num "
             "more of head_hidden_size")
_SIZES_README = (SIZES_WHY + "; PPO's and PPG's networks get them as policy.model.encoder_hidden_sizes (actor) and "
                 "value_encoder_hidden_sizes (critic, where it differs; share_encoder=False only); keys left out take "
                 "DI-engine's defaults (64, 1 layer; PPO's and PPG's encoder [128, 128, 64], shared; PPG's actor head "
                 "2 layers)")
_DQN_HEAD = ("in each branch of the head (Q, or V and A when dueling) head_layer_num hidden layers of head_hidden_size "
             "(left out: the encoder's last size), each with the activation, then its output layer, as DI-engine's "
             "DiscreteHead and DuelingHead")
_RESUME = 'continue a run with tidal resume RUN_DIR; tidal loads no checkpoint into a new run'
_LOGGING = "DI-engine's logging and tracking options; tidal's buffer logs its own"

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
                                         "create_config.env_manager.type ('base', 'subprocess', 'envpool' or 'numpy')"),
    # offline: before SAC's and TD3's norm_obs rules, which CQL and TD3+BC would otherwise meet first
    KeyRule('env.norm_obs', 'convert', 'policy.collect.normalize_states', "observations normalised by the dataset's "
                                                                          "mean and standard deviation "
                                                                          "(offline_stats), or not",
            _offline_norm_obs, OFFLINE_FAMILY),
    KeyRule('env.reward_norm', 'convert', 'policy.collect.reward_norm', "'iql_locomotion' is 'return_range' (rewards "
                                                                        "times 1000 / the dataset's return range), "
                                                                        "'normalize' is 'standardize'",
            _reward_norm, OFFLINE_FAMILY),
    KeyRule('policy.collect.data_type', 'convert', '', "'d4rl' reads the Minari dataset env type 'd4rl' maps env.env_id to; "
                                                       "'hdf5' reads DI-engine's hdf5 file at collect.data_path; "
                                                       "others are refused", _data_type, OFFLINE_FAMILY),
    KeyRule('policy.eval.evaluator.eval_freq', 'convert', 'policy.eval.evaluator.eval_freq',
            f"<= 0 (DI-engine: after every pass over the dataset) evaluates every {OFFLINE_EVAL_FREQ} train iterations; "
            f"other values stay", _offline_eval_freq, OFFLINE_FAMILY, ding_only=True),
    KeyRule('policy.learn.data_path', 'ignore', why="DI-engine's offline policies do not read it; the dataset is "
                                                    "policy.collect.data_path", policies=OFFLINE_FAMILY),
    KeyRule('policy.collect.noise', 'ignore', why='an offline run collects nothing', policies=('bc',)),
    KeyRule('policy.collect.noise_sigma', 'ignore', why='an offline run collects nothing', policies=('bc',)),
    KeyRule('policy.collect.noise_range', 'ignore', why='an offline run collects nothing', policies=('bc',)),
    KeyRule('policy.learn.tau', 'rename', 'policy.learn.expectile', "IQL's expectile of the value fit",
            policies=('iql',)),
    KeyRule('policy.learn.beta', 'convert', 'policy.learn.beta', "DI-engine's IQL weighs by exp(A / beta), tidal's "
                                                                 "(as the paper) by exp(beta A): 1 / beta",
            _iql_beta, ('iql',), ding_only=True),
    KeyRule('policy.model.num_quantiles', 'convert', '', "refused: DI-engine's discrete CQL learns QR-DQN's "
                                                         "quantiles, tidal's DQN's expected values",
            _refuse_quantiles, ('discrete_cql',)),
    KeyRule('policy.learn.min_q_weight', 'rename', 'policy.learn.cql_weight', "the weight of CQL's penalty",
            policies=('cql', 'discrete_cql')),
    KeyRule('policy.learn.num_actions', 'rename', 'policy.learn.num_action_samples', "actions sampled per state and "
                                                                                    "proposal for CQL's log-sum-exp",
            policies=('cql',)),
    KeyRule('policy.learn.with_q_entropy', 'rename', 'policy.learn.backup_entropy', "the entropy term in CQL's "
                                                                                   "target", policies=('cql',)),
    KeyRule('policy.learn.with_lagrange', 'convert', '', "DI-engine tunes the penalty weight only with "
                                                         "lagrange_thresh > 0 too (refused: not built)", _lagrange,
            ('cql',)),
    KeyRule('policy.learn.lagrange_thresh', 'convert', '', "read only with with_lagrange=True (> 0 is refused: not "
                                                           "built)", _lagrange, ('cql',)),
    KeyRule('policy.loss_type', 'convert', '', "'mse_loss', tidal's (others refused)",
            _only('policy.loss_type', 'mse_loss', "tidal's continuous BC regresses by squared error ('mse_loss')"),
            ('bc',)),
    KeyRule('policy.action_shape', 'ignore', why="the env fills policy.model.action_shape in", policies=('bc',)),
    KeyRule('policy.learn.optimizer', 'convert', 'policy.learn.optimizer', "'SGD' -> 'sgd', 'Adam' -> 'adam'",
            _bc_optimizer, ('bc',), ding_only=True),
    KeyRule('policy.learn.weight_decay', 'convert', 'policy.learn.weight_decay', "None is 0 (plain Adam); a decay "
                                                                                "makes 'adam' AdamW, as DI-engine",
            _weight_decay, ('bc',), ding_only=True),
    KeyRule('policy.learn.lr_decay', 'convert', '', "False only: DI-engine's warm-up and step decay are not built",
            _only('policy.learn.lr_decay', False, "tidal's BC keeps its learning rate; the warm-up and step decay are "
                                                  "not built"), ('bc',)),
    KeyRule('policy.learn.ce_label_smooth', 'convert', '', 'False only',
            _only('policy.learn.ce_label_smooth', False, "tidal's discrete BC fits plain cross-entropy"), ('bc',)),
    KeyRule('policy.learn.tanh_mask', 'convert', '', 'False only',
            _only('policy.learn.tanh_mask', False, "tidal's continuous BC fits every action"), ('bc',)),
    KeyRule('policy.learn.show_accuracy', 'ignore', why="tidal logs BC's loss", policies=('bc',)),
    KeyRule('policy.learn.decay_epoch', 'ignore', why='read only with lr_decay=True', policies=('bc',)),
    KeyRule('policy.learn.decay_rate', 'ignore', why='read only with lr_decay=True', policies=('bc',)),
    KeyRule('policy.learn.warmup_lr', 'ignore', why='read only with lr_decay=True', policies=('bc',)),
    KeyRule('policy.learn.warmup_epoch', 'ignore', why='read only with lr_decay=True', policies=('bc',)),
    KeyRule('env.norm_obs', 'convert', 'policy.normalize.obs', "DI-engine's MuJoCo wrapper option use_norm is "
                                                                "tidal's running observation normalization",
            _normalize('obs'), PPO_FAMILY),
    KeyRule('env.norm_reward', 'convert', 'policy.normalize.reward', "DI-engine's MuJoCo wrapper option use_norm is "
                                                                     "tidal's reward scaling",
            _normalize('reward'), PPO_FAMILY),
    KeyRule('env.norm_obs', 'convert', '', "use_norm=False, as tidal's SAC runs (True is refused)",
            _only('env.norm_obs', {'use_norm': False}, "tidal's SAC does not normalize observations"), SAC_FAMILY),
    KeyRule('env.norm_reward', 'convert', '', "use_norm=False, as tidal's SAC runs (True is refused)",
            _only('env.norm_reward', {'use_norm': False}, "tidal's SAC does not normalize rewards"), SAC_FAMILY),
    KeyRule('env.rew_clip', 'ignore', why='tidal does not clip rewards'),
    KeyRule('env.replay_path', 'ignore', why='tidal records no episode videos'),
    KeyRule('env.save_replay_gif', 'ignore', why='tidal records no episode videos'),
    KeyRule('env.replay_path_gif', 'ignore', why='tidal records no episode videos'),
    KeyRule('env.action_clip', 'ignore', why="tidal's policies act within the env's bounds (tanh-squashed or "
                                              "clipped)"),
    # policy, every type
    KeyRule('policy.cuda', 'convert', 'policy.device', "cuda=True (without policy.device) is CUDA when available, "
                                                      "as in DI-engine; False is tidal's own key", _cuda),
    KeyRule('policy.multi_gpu', 'ignore', why='several learner processes run under torchrun (docs/distributed.md: '
                                              'Several learner processes)'),
    KeyRule('policy.on_policy', 'ignore', why="tidal picks the pipeline from the policy type"),
    KeyRule('policy.transition_with_policy_data', 'ignore', why="each policy's process_transition decides what a "
                                                                "transition keeps"),
    KeyRule('policy.load_path', 'ignore', why="DI-engine's serial pipelines do not read it (its eval entries do); "
                                              "tidal eval --ckpt PATH evaluates saved weights"),
    KeyRule('policy.command', 'ignore', why='DI-engine command-mode settings; tidal has no command mode'),
    KeyRule('policy.bp_update_sync', 'ignore', why="DI-engine's multi-GPU gradient sync option; tidal's DDP learners "
                                                   "average gradients in every optimizer step"),
    KeyRule('policy.traj_len_inf', 'ignore', why="DI-engine's collector option for whole-episode trajectories; each "
                                                 "tidal policy's feed decides the sample length"),
    KeyRule('policy.other.commander', 'ignore', why="DI-engine's command-mode settings; tidal has no command mode"),
    KeyRule('policy.model.norm_type', 'convert', '', "tidal's networks have no normalization layers (None only)",
            _only('policy.model.norm_type', None, "tidal's networks have no normalization layers; remove it")),
    KeyRule('policy.learn.multi_gpu', 'ignore', why='several learner processes run under torchrun '
                                                    '(docs/distributed.md: Several learner processes)'),
    KeyRule('policy.learn.resume_training', 'convert', '', f'False starts afresh, as tidal does; True: {_RESUME}',
            _only('policy.learn.resume_training', False, _RESUME)),
    KeyRule('policy.learn.learner.hook.log_show_after_iter', 'rename', 'policy.learn.learner.log_freq',
            'train iterations between log lines'),
    KeyRule('policy.learn.learner.hook.save_ckpt_after_iter', 'rename', 'policy.learn.learner.save_ckpt_freq',
            'train iterations between checkpoints'),
    KeyRule('policy.learn.learner.hook.load_ckpt_before_run', 'convert', '', f"'' loads nothing; a path: {_RESUME}",
            _only('policy.learn.learner.hook.load_ckpt_before_run', None, _RESUME)),
    KeyRule('policy.collect.collector', 'ignore', why="DI-engine collector options; tidal's collector takes none"),
    KeyRule('policy.collect.env_num', 'ignore', why='env.collector_env_num sets it'),
    KeyRule('policy.collect.collector_env_num', 'ignore', why='env.collector_env_num sets it'),
    KeyRule('policy.eval.env_num', 'ignore', why='env.evaluator_env_num sets it'),
    KeyRule('policy.eval.evaluator.n_episode', 'rename', 'env.n_evaluator_episode', 'episodes per evaluation'),
    KeyRule('policy.other.replay_buffer.max_use', 'ignore', why="tidal's buffer overwrites the oldest data only"),
    KeyRule('policy.other.replay_buffer.max_staleness', 'ignore', why="tidal's buffer overwrites the oldest data "
                                                                      "only"),
    KeyRule('policy.other.replay_buffer.deepcopy', 'ignore', why="tidal's buffer stores columns, never objects"),
    KeyRule('policy.other.replay_buffer.enable_track_used_data', 'ignore', why=_LOGGING),
    KeyRule('policy.other.replay_buffer.periodic_thruput_seconds', 'ignore', why=_LOGGING),
    # SAC, discrete SAC, SQIL-SAC, MASAC
    KeyRule('policy.discount_factor', 'ignore', why="DI-engine's SAC reads learn.discount_factor, as tidal does",
            policies=SAC_FAMILY),
    KeyRule('policy.expert_random_collect_size', 'ignore', why="tidal's SQIL reads demonstrations from "
                                                               "policy.expert_data_path (tidal collect-demos)",
            policies=SAC_FAMILY),
    KeyRule('policy.model.actor_head_hidden_size', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README,
            policies=LAYOUT_FAMILY),
    KeyRule('policy.model.actor_head_layer_num', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README,
            policies=LAYOUT_FAMILY),
    KeyRule('policy.model.critic_head_hidden_size', 'convert', 'policy.model.critic_hidden_sizes', _SIZES_README,
            policies=LAYOUT_FAMILY),
    KeyRule('policy.model.critic_head_layer_num', 'convert', 'policy.model.critic_hidden_sizes', _SIZES_README,
            policies=LAYOUT_FAMILY),
    KeyRule('policy.model.encoder_hidden_size_list', 'convert', 'policy.model.actor_hidden_sizes', _SIZES_README,
            policies=LAYOUT_FAMILY),
    # DQN, SQL and SQIL: tidal's dqn model reads DI-engine's keys itself (DI-engine's defaults: translation)
    KeyRule('policy.model.encoder_hidden_size_list', 'same',
            why="DI-engine's DQN encoder: a linear layer of each size, each with the activation; on Atari frames "
                "DI-engine's ConvEncoder: 8x8/4, 4x4/2 and 3x3/1 conv layers of the first sizes "
                "(policy.model.conv_channels, pixels scaled by 1/255), then a linear layer of the last",
            policies=DQN_FAMILY),
    KeyRule('policy.model.head_hidden_size', 'same', why=_DQN_HEAD, policies=DQN_FAMILY),
    KeyRule('policy.model.head_layer_num', 'same',
            why=_DQN_HEAD + "; left out of a DI-engine config it is DI-engine's 1, written into config.yaml; tidal's "
                            "own default is 0 (its zoo configs' head)", policies=DQN_FAMILY),
    KeyRule('policy.model.dueling', 'same', why="Q = V + A - mean(A), V and A each from its own branch; True by "
                                                "default in both", policies=DQN_FAMILY),
    KeyRule('policy.model.activation', 'convert', 'policy.model.activation',
            f"torch.nn modules and classes become tidal's activation names ({', '.join(ACTIVATIONS.values())})"),
    KeyRule('policy.model.actor_head_type', 'ignore', why="tidal's SAC actor is always a reparameterized "
                                                          "tanh-Gaussian", policies=SAC_FAMILY),
    KeyRule('policy.model.share_encoder', 'convert', '', "DI-engine's QAC default; tidal's SAC actor and critics "
                                                         "never share layers (True is refused)",
            _only('policy.model.share_encoder', False, "tidal's SAC actor and critics never share layers"),
            SAC_FAMILY),
    KeyRule('policy.learn.value_network', 'convert', '', "False is tidal's 'sac'; True is policy type 'sac_v'",
            _only('policy.learn.value_network', False, "SAC with a state-value network is tidal's policy type "
                                                       "'sac_v'; set create_config.policy.type='sac_v' and remove it"),
            SAC_FAMILY),
    KeyRule('policy.learn.reparameterization', 'ignore', why="tidal's SAC always uses the reparameterization trick",
            policies=SAC_FAMILY),
    KeyRule('policy.collect.noise_sigma', 'ignore', why='SAC explores by sampling its own Gaussian',
            policies=SAC_FAMILY),
    KeyRule('policy.collect.collector_logit', 'ignore', why="each policy's process_transition decides what a "
                                                            "transition keeps", policies=SAC_FAMILY),
    KeyRule('policy.collect.model_path', 'ignore', why="tidal's SQIL-SAC reads its demonstrations from "
                                                       "policy.expert_data_path or policy.collect.data_path: a tidal "
                                                       "collect-demos file or a Minari dataset",
            policies=SAC_FAMILY),
    # DDPG and TD3
    KeyRule('env.norm_obs', 'convert', '', "use_norm=False, as tidal's DDPG and TD3 run (True is refused)",
            _only('env.norm_obs', {'use_norm': False}, "tidal's DDPG and TD3 do not normalize observations"),
            DDPG_FAMILY),
    KeyRule('env.norm_reward', 'convert', '', "use_norm=False, as tidal's DDPG and TD3 run (True is refused)",
            _only('env.norm_reward', {'use_norm': False}, "tidal's DDPG and TD3 do not normalize rewards"),
            DDPG_FAMILY),
    KeyRule('policy.action_space', 'convert', '', "'continuous' only (DI-engine's 'hybrid' is refused)",
            _only('policy.action_space', 'continuous', "tidal's DDPG and TD3 act on continuous actions only"),
            DDPG_FAMILY),
    KeyRule('policy.reward_batch_norm', 'convert', '', "False only: tidal does not normalise rewards per batch",
            _only('policy.reward_batch_norm', False, "tidal's DDPG and TD3 do not normalise rewards per batch"),
            DDPG_FAMILY),
    KeyRule('policy.multi_agent', 'convert', '', "tidal's DDPG and TD3 are single-agent (True is refused)",
            _only('policy.multi_agent', False, "tidal has no multi-agent DDPG or TD3; its multi-agent policies are "
                                               "sac and discrete_sac"), DDPG_FAMILY),
    KeyRule('policy.collect.collector_logit', 'ignore', why="each policy's process_transition decides what a "
                                                            "transition keeps", policies=DDPG_FAMILY),
    # PPO and PPG
    KeyRule('policy.action_space', 'ignore', why="DI-engine's PPO and A2C read it beside policy.model.action_space, "
                                                 "which tidal fills from the env", policies=(*PPO_FAMILY, 'a2c')),
    KeyRule('policy.recompute_adv', 'ignore', why='tidal computes GAE once per rollout, before the epochs',
            policies=PPO_FAMILY),
    KeyRule('policy.nstep_return', 'convert', '', "tidal's PPO fits GAE returns (True is refused)",
            _only('policy.nstep_return', False, "tidal's PPO fits GAE returns; remove it"), PPO_FAMILY),
    KeyRule('policy.multi_agent', 'convert', '', "tidal's PPO is single-agent (True, MAPPO, is refused)",
            _only('policy.multi_agent', False, "tidal has no multi-agent PPO; its multi-agent policies are sac and "
                                               "discrete_sac"), PPO_FAMILY),
    KeyRule('policy.model.sigma_type', 'convert', '', "'independent' is tidal's learned state-independent log std; "
                                                      "other types are refused",
            _only('policy.model.sigma_type', 'independent', "tidal's PPO Gaussian has a learned, state-independent "
                                                            "log std ('independent')"), PPO_FAMILY),
    KeyRule('policy.model.fixed_sigma_value', 'ignore', why="read only with sigma_type 'fixed', which is refused",
            policies=PPO_FAMILY),
    KeyRule('policy.model.bound_type', 'ignore', why="tidal's PPO clips its Gaussian actions to the env's bounds",
            policies=PPO_FAMILY),
    KeyRule('policy.model.encoder', 'convert', '', "None builds the encoder from the layout keys; a module object "
                                                  "is refused (tidal builds its models from config values)",
            _only('policy.model.encoder', None, "tidal builds its models from config values; register your own "
                                                "model instead"), PPO_FAMILY),
    KeyRule('policy.model.impala_cnn_encoder', 'convert', '', "tidal's image encoder is its own CNN (True is "
                                                              "refused)",
            _only('policy.model.impala_cnn_encoder', False, "tidal has no IMPALA encoder"), PPO_FAMILY),
    KeyRule('policy.learn.value_norm', 'ignore', why="tidal does not normalize value targets (see "
                                                     "policy.normalize.reward)", policies=PPO_FAMILY),
    KeyRule('policy.learn.ppo_param_init', 'rename', 'policy.model.orthogonal_init', "orthogonal init of the "
                                                                                   "actor-critic's layers",
            policies=PPO_FAMILY),
    KeyRule('policy.learn.grad_clip_type', 'convert', '', "tidal clips the global gradient norm "
                                                         "(learn.grad_clip_norm), which 'clip_norm' names; other "
                                                         "types are refused",
            _only('policy.learn.grad_clip_type', 'clip_norm', "tidal clips the gradient norm only ('clip_norm', with "
                                                              "learn.grad_clip_value as policy.learn.grad_clip_norm)"),
            PPO_FAMILY),
    KeyRule('policy.learn.grad_clip_value', 'rename', 'policy.learn.grad_clip_norm', 'the global gradient norm',
            policies=PPO_FAMILY),
    KeyRule('policy.learn.lr_scheduler', 'convert', 'policy.learn.lr_decay',
            "DI-engine's linear decay to min_lr_lambda=0 over epoch_num collections is tidal's lr_decay over "
            "epoch_num * collect.n_sample env steps; None keeps the rate; min_lr_lambda > 0 is refused",
            _lr_schedule, PPO_FAMILY),
    KeyRule('policy.learn.kl_type', 'ignore', why="it picks the estimator of DI-engine's logged approximate KL; "
                                                  "tidal logs its own", policies=PPO_FAMILY),
    KeyRule('policy.learn.kl_beta', 'convert', '', "DI-engine's KL term to a pretrained policy counts only with "
                                                   "learn.pretrained_model_path set (refused); without it, or at 0, "
                                                   "the objective is the clipped one alone, as tidal's",
            _kl_beta, PPO_FAMILY),
    KeyRule('policy.learn.pretrained_model_path', 'convert', '', f"None loads nothing; a path: {_RESUME}",
            _only('policy.learn.pretrained_model_path', None, _RESUME), PPO_FAMILY),
    KeyRule('policy.learn.actor_epoch_per_collect', 'convert', 'policy.learn.epoch_per_collect',
            "tidal's PPG trains the policy and the value in the same epochs; DI-engine's actor and critic epochs "
            "must be equal", _ppg_epochs, ('ppg',)),
    KeyRule('policy.learn.critic_epoch_per_collect', 'convert', 'policy.learn.epoch_per_collect',
            "tidal's PPG trains the policy and the value in the same epochs; DI-engine's actor and critic epochs "
            "must be equal", _ppg_epochs, ('ppg',)),
    KeyRule('policy.learn.aux_freq', 'rename', 'policy.aux.interval', 'rollouts between auxiliary phases',
            policies=('ppg',)),
    KeyRule('policy.learn.aux_train_epoch', 'rename', 'policy.aux.num_updates_per_train_iter',
            'epochs over the stored rollouts per auxiliary phase', policies=('ppg',)),
    KeyRule('policy.learn.aux_bc_weight', 'rename', 'policy.aux.policy_kl_loss_weight',
            "the weight of the behaviour-cloning KL that keeps the policy in the auxiliary phase", policies=('ppg',)),
    # A2C
    KeyRule('policy.learn.grad_norm', 'rename', 'policy.learn.grad_clip_norm', 'the global gradient norm',
            policies=('a2c',)),
)

#: DI-engine's PettingZoo env keys -> what tidal's 'pettingzoo' env does with them (translation applies these).
PETTING_ZOO_KEYS = {
    'env.env_family': "with env_id, the PettingZoo module: 'mpe' and 'simple_spread_v2' are env.env_id "
                      "'mpe2.simple_spread_v3'",
    'env.env_id': "with env_family, the PettingZoo module, at mpe2's current version",
    'env.n_agent': 'env.env_kwargs.N',
    'env.n_landmark': "MPE's simple_spread has one landmark per agent: it must equal n_agent",
    'env.max_cycles': 'env.env_kwargs.max_cycles',
    'env.continuous_actions': 'env.env_kwargs.continuous_actions',
    'env.agent_obs_only': "False only: tidal's multi-agent policies read agent_state, global_state and action_mask",
    'env.agent_specific_global_state': "ignored: tidal's critic reads the env's global state beside a one-hot "
                                       "agent id, which tells it whose value it scores",
    'policy.model.global_obs_shape': "ignored: it sizes DI-engine's global state; tidal's is the env's state(), "
                                     "whose size the env fills in",
}

#: DI-engine's defaults, for the keys a DI-engine file leaves out, where tidal's differ: policy type -> {key path:
#: DI-engine's value}. Written into the run's config.yaml and its ding_mapping.txt.
DING_DEFAULTS: dict[str, dict[str, Any]] = {
    'td3_bc': {'policy.learn.learning_rate_actor': 1e-3, 'policy.learn.learning_rate_critic': 1e-3,
               'policy.collect.normalize_states': False},
    'cql': {'policy.learn.alpha': 0.2, 'policy.learn.learning_rate_policy': 3e-4,
            'policy.learn.learning_rate_alpha': 3e-4, 'policy.learn.cql_weight': 1.0,
            'policy.collect.normalize_states': False},
    # DI-engine's IQL clips its weights at 20 and learns a state-dependent std
    'iql': {'policy.learn.beta': 1.0, 'policy.learn.max_weight': 20.0, 'policy.model.state_dependent_std': True,
            'policy.collect.normalize_states': False},
    'bc': {'policy.continuous': False, 'policy.learn.optimizer': 'sgd', 'policy.learn.momentum': 0.9,
           'policy.learn.weight_decay': 1e-4, 'policy.learn.learning_rate': 1e-5, 'policy.learn.batch_size': 32,
           'policy.collect.normalize_states': False},
}
#: DI-engine's default head layouts of these policies' models, where they differ from QAC's (64, one layer).
DING_HEAD_DEFAULTS: dict[str, dict[str, int]] = {
    'td3_bc': {'actor_head_hidden_size': 256, 'critic_head_hidden_size': 256},
    'cql': {'actor_head_hidden_size': 256, 'critic_head_hidden_size': 256},
    'iql': {'actor_head_hidden_size': 512, 'actor_head_layer_num': 3, 'critic_head_hidden_size': 512,
            'critic_head_layer_num': 2},
}

#: Keys DI-engine and tidal spell and read the same way (listed in the docs only).
SAME_KEYS = ('exp_name', 'seed', 'env.env_id', 'env.collector_env_num', 'env.evaluator_env_num',
             'env.n_evaluator_episode', 'env.stop_value', 'policy.priority', 'policy.priority_IS_weight',
             'policy.random_collect_size', 'policy.multi_agent (SAC)', 'policy.model.obs_shape',
             'policy.model.action_shape', 'policy.model.agent_obs_shape', 'policy.model.twin_critic',
             'policy.model.share_encoder (PPO, PPG)', 'policy.learn.update_per_collect', 'policy.learn.batch_size',
             'policy.learn.learning_rate_q', 'policy.learn.learning_rate_policy', 'policy.learn.learning_rate_alpha',
             'policy.learn.target_theta', 'policy.learn.discount_factor', 'policy.learn.alpha',
             'policy.learn.auto_alpha', 'policy.learn.log_space', 'policy.learn.target_entropy', 'policy.learn.init_w',
             'policy.learn.ignore_done', 'policy.learn.epoch_per_collect', 'policy.learn.learning_rate',
             'policy.learn.clip_ratio', 'policy.learn.value_weight', 'policy.learn.entropy_weight',
             'policy.learn.adv_norm', 'policy.collect.n_sample', 'policy.collect.unroll_len',
             'policy.collect.discount_factor', 'policy.collect.gae_lambda', 'policy.eval.evaluator.eval_freq',
             'policy.other.eps (discrete SAC)', 'policy.other.replay_buffer.replay_buffer_size',
             'policy.learn.learning_rate_actor (DDPG, TD3)', 'policy.learn.learning_rate_critic (DDPG, TD3)',
             'policy.learn.actor_update_freq', 'policy.learn.noise', 'policy.learn.noise_sigma',
             'policy.learn.noise_range', 'policy.collect.noise_sigma (DDPG, TD3)', 'policy.learn.train_epoch (offline)',
             'policy.collect.data_path (offline)', 'policy.continuous (BC)', 'policy.learn.momentum (BC)',
             'policy.learn.alpha (TD3+BC, CQL)')


# ----- docs ------------------------------------------------------------------------------------------
def markdown_tables() -> str:
    """The docs' tables of DI-engine env types and keys, generated from the tables above."""
    lines = ['| DI-engine env type | tidal env | note |', '|---|---|---|']
    for name, env in ENV_TYPES.items():
        if env.refused:
            lines.append(f'| `{name}` | refused | {env.note} |')
            continue
        kwargs = ''.join(f', `env_kwargs.{key}={value!r}`' for key, value in env.env_kwargs)
        env_id = f'`{env.env_id}`' if env.env_id else "the config's"
        lines.append(f"| `{name}` | `{env.tidal_type}`, env_id {env_id}{kwargs} | {env.note} |")
    lines += ['', '| DI-engine key | policies | tidal | why |', '|---|---|---|---|']
    for rule in KEY_RULES:
        if rule.action == 'ignore':
            what = 'ignored'
        elif rule.action == 'same':
            what = 'same key'
        elif rule.target:
            what = f'`{rule.target}`' + (' (converted)' if rule.action == 'convert' else '')
        else:
            what = 'checked, then dropped'
        why = rule.why + (' (in DI-engine files only: tidal reads this key with its own meaning)' if rule.ding_only else '')
        lines.append(f"| `{rule.path}` | {', '.join(rule.policies) or 'all'} | {what} | {why} |")
    lines.append("| `policy.model.action_space` | all | same key for PPO ('discrete', 'continuous'); QAC's "
                 "actor heads: 'reparameterization' is ignored for SAC, 'regression' for DDPG and TD3, the other "
                 "refused | tidal's SAC actor is always a tanh-Gaussian, its DDPG and TD3 actor deterministic |")
    lines += [f'| `{key}` (petting_zoo) | discrete_sac, sac | {what} | |' for key, what in PETTING_ZOO_KEYS.items()]
    lines += [f'| `{key}` | | same key | |' for key in SAME_KEYS]
    return '\n'.join(lines) + '\n'
