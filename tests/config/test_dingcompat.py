"""DI-engine configs: env types, import names and keys turned into tidal's, each recorded once with why."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch.nn as nn

from tidal.base.errors import ConfigError, UnknownNameError
from tidal.config import compile_config, read_config, resolve_config_source
from tidal.config.ding import mapping_of, write_ding_mapping
from tidal.config.ding.tables import KEY_RULES, markdown_tables
from tidal.policies import PPOPolicy, SACPolicy
from tidal.registry import MODEL_REGISTRY, POLICY_REGISTRY

DOCS_PAGE = Path(__file__).parents[2] / 'docs' / 'di-engine.md'
DING_CONFIGS = Path(__file__).parent / 'ding_configs'

CREATE = {'env': {'type': 'pendulum', 'import_names': ['dizoo.classic_control.pendulum.envs.pendulum_env']},
          'env_manager': {'type': 'base'}, 'policy': {'type': 'sac'}}


def compiled(main: dict, create: dict = CREATE, policy: str = ''):
    """The compiled config and {DI-engine key: (what was done, why)} of its translation."""
    create = copy.deepcopy(create)
    if policy:
        create['policy'] = {'type': policy}
    cfg = compile_config(copy.deepcopy(main), create, infer_shapes=False)
    mapping = mapping_of(cfg)
    notes = {} if mapping is None else {note.key: (note.done, note.why) for note in mapping.notes}
    if mapping is not None:
        assert len(notes) == len(mapping.notes)  # each key once
    return cfg, notes


def refusal(main: dict, create: dict = CREATE, policy: str = '') -> str:
    with pytest.raises((ConfigError, UnknownNameError)) as err:
        compiled(main, create, policy)
    message = str(err.value).strip("'")  # a KeyError's str quotes its message
    assert '\n' not in message
    return message


def test_dizoo_import_is_dropped_and_env_type_runs_as_gym():
    cfg, notes = compiled({})
    assert (cfg.env.type, cfg.env.env_id, cfg.env.import_names) == ('gym', 'Pendulum-v1', [])
    assert notes['env.type'] == ("-> 'env.type' = 'gym', 'env.env_id' = 'Pendulum-v1'", 'as in DI-engine')
    assert notes['create_config.env.import_names'][0] == 'dropped'


def test_sac_keys_are_converted_or_ignored_saying_what_and_why():
    main = {'env': {'act_scale': True, 'manager': {'shared_memory': False}},
            'policy': {'cuda': True, 'multi_gpu': False,
                       'model': {'action_space': 'reparameterization', 'actor_head_hidden_size': 32,
                                 'critic_head_hidden_size': 64, 'critic_head_layer_num': 2},
                       'learn': {'value_network': False, 'learner': {'hook': {'save_ckpt_after_iter': 500}}},
                       'collect': {'noise_sigma': 0.2}}}
    cfg, notes = compiled(main)
    assert cfg.env.normalize_action is True and cfg.policy.device == 'auto' and cfg.policy.cuda is False
    assert (cfg.policy.model.actor_hidden_sizes, cfg.policy.model.critic_hidden_sizes) == ([32, 32], [64, 64, 64])
    assert cfg.policy.learn.learner.save_ckpt_freq == 500
    assert notes['policy.model.critic_head_layer_num'][0] == \
        "-> part of 'policy.model.critic_hidden_sizes' = [64, 64, 64]"
    assert notes['env.act_scale'][0] == "-> 'env.normalize_action' = True"
    assert notes['policy.cuda'][0] == "-> 'policy.device' = 'auto'"
    assert notes['policy.collect.noise_sigma'] == ('ignored', 'SAC explores by sampling its own Gaussian')
    assert notes['policy.learn.value_network'][0].startswith('checked, then dropped')
    assert notes['policy.model.activation'] == ("-> 'policy.model.activation' = 'relu'",
                                                "DI-engine's models default to nn.ReLU()")
    assert set(notes) == {'create_config.env.import_names', 'env.type', 'policy.model.action_space',
                          'policy.model.activation', 'policy.model.actor_head_hidden_size',
                          'policy.model.critic_head_hidden_size', 'policy.model.critic_head_layer_num',
                          'env.act_scale', 'env.manager', 'policy.cuda', 'policy.multi_gpu',
                          'policy.learn.value_network', 'policy.learn.learner.hook.save_ckpt_after_iter',
                          'policy.collect.noise_sigma'}


@POLICY_REGISTRY.register('test_ding_user_sac', force=True)
class UserSAC(SACPolicy):
    """A SAC of the user's own, registered the DI-engine way: a subclass under a name of its own."""


@POLICY_REGISTRY.register('test_ding_user_ppo', force=True)
class UserPPO(PPOPolicy):
    """A PPO of the user's own."""


@pytest.mark.parametrize('file, policy, key', [
    ('pendulum_sac_config.py', 'test_ding_user_sac', 'policy.learn.value_network'),
    ('pendulum_ppo_config.py', 'test_ding_user_ppo', 'policy.recompute_adv'),
])
def test_ding_rules_hold_for_a_registered_subclass_of_their_policy(file, policy, key):
    main, create = read_config(str(DING_CONFIGS / file))
    create['policy']['type'] = policy
    cfg, notes = compiled(main, create)
    assert cfg.policy.type == policy and key in notes


def test_a_sac_rule_does_not_hold_for_ppo():
    assert refusal({'policy': {'collect': {'noise_sigma': 0.2}}}, policy='ppo').startswith(
        "unknown config key 'policy.collect.noise_sigma'")


def test_tidal_configs_have_no_ding_mapping():
    create = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}
    cfg, notes = compiled({'env': {'env_id': 'Pendulum-v1'}, 'policy': {'cuda': False, 'device': 'cpu'}}, create)
    assert notes == {} and cfg.policy.device == 'cpu'


def test_cuda_beside_a_device_is_tidals_own_key():
    cfg, notes = compiled({'policy': {'cuda': True, 'device': 'cpu'}})
    assert (cfg.policy.device, cfg.policy.cuda) == ('cpu', True) and 'policy.cuda' not in notes


def test_unknown_key_stays_an_error_with_did_you_mean():
    assert refusal({'policy': {'learn': {'btach_size': 64}}}) == \
        "unknown config key 'policy.learn.btach_size'; did you mean 'policy.learn.batch_size'?"


def test_unknown_model_key_stays_an_error_with_did_you_mean():
    assert refusal({'policy': {'model': {'actor_head_hidden_size': 16, 'twin_critics': True}}}) == \
        "policy.model.twin_critics is not an argument of model 'continuous_qac'; did you mean 'twin_critic'?"


def test_ding_policy_type_ding_itself_lacks_stays_an_error():
    assert refusal({}, policy='sac_discrete').startswith("unknown policy 'sac_discrete'; did you mean 'discrete_sac'")


@pytest.mark.parametrize('activation, name', [(nn.Tanh(), 'tanh'), (nn.ReLU, 'relu'), (nn.SiLU(), 'silu')])
def test_torch_activation_becomes_its_name(activation, name):
    cfg, notes = compiled({'policy': {'model': {'activation': activation}}}, policy='ppo')
    assert cfg.policy.model.activation == name
    assert notes['policy.model.activation'][0] == f"-> 'policy.model.activation' = '{name}'"


def test_activation_tidal_lacks_is_refused():
    assert refusal({'policy': {'model': {'activation': nn.LeakyReLU()}}}, policy='ppo') == (
        "config key 'policy.model.activation' holds LeakyReLU(negative_slope=0.01); tidal's models take nn.ReLU, "
        "nn.Tanh, nn.ELU, nn.GELU, nn.SiLU (or their names: relu, tanh, elu, gelu, silu)")


def test_ppo_layout_on_dings_default_shared_encoder():
    main = {'policy': {'model': {'encoder_hidden_size_list': [64, 64], 'actor_head_hidden_size': 128,
                                 'critic_head_hidden_size': 128, 'action_space': 'continuous'},
                       'learn': {'ppo_param_init': False, 'grad_clip_type': 'clip_norm', 'grad_clip_value': 1.0}}}
    cfg, notes = compiled(main, policy='ppo')
    model = cfg.policy.model
    assert (model.encoder_hidden_sizes, model.share_encoder, model.get('value_encoder_hidden_sizes')) == \
        ([64, 64, 128], True, None)
    assert model.action_space == 'continuous' and model.orthogonal_init is False
    assert cfg.policy.learn.grad_clip_norm == 1.0
    assert notes['policy.model.share_encoder'][0] == "-> 'policy.model.share_encoder' = True"


def test_ppo_critic_layout_of_its_own_on_separate_encoders():
    main = {'policy': {'model': {'encoder_hidden_size_list': [128, 128], 'share_encoder': False,
                                 'actor_head_layer_num': 0, 'actor_head_hidden_size': 128,
                                 'critic_head_layer_num': 2, 'critic_head_hidden_size': 256}}}
    cfg, notes = compiled(main, policy='ppo')
    assert (cfg.policy.model.encoder_hidden_sizes, cfg.policy.model.value_encoder_hidden_sizes) == \
        ([128, 128], [128, 128, 256, 256])
    assert notes['policy.model.critic_head_hidden_size'][0] == \
        "-> part of 'policy.model.value_encoder_hidden_sizes' = [128, 128, 256, 256]"


def test_ppo_critic_layout_unlike_the_actors_on_a_shared_encoder_is_refused():
    assert "on a shared encoder (policy.model.share_encoder, True by default in DI-engine)" in \
        refusal({'policy': {'model': {'actor_head_hidden_size': 64, 'critic_head_hidden_size': 32}}}, policy='ppo')


def test_ppo_keys_of_dings_defaults_are_dropped_and_others_refused():
    main = {'policy': {'recompute_adv': True, 'nstep_return': False, 'multi_agent': False,
                       'learn': {'resume_training': False, 'kl_beta': 0.0, 'kl_type': 'k1', 'lr_scheduler': None,
                                 'pretrained_model_path': None, 'value_norm': True},
                       'model': {'sigma_type': 'independent', 'norm_type': None}}}
    cfg, notes = compiled(main, policy='ppo')
    assert notes['policy.learn.resume_training'][0].startswith('checked, then dropped')
    assert notes['policy.learn.kl_type'][0] == 'ignored'
    assert refusal({'policy': {'learn': {'resume_training': True}}}, policy='ppo') == (
        "config key 'policy.learn.resume_training' is True: continue a run with tidal resume RUN_DIR; tidal loads "
        "no checkpoint into a new run")
    assert "tidal has no multi-agent PPO" in refusal({'policy': {'multi_agent': True}}, policy='ppo')
    assert "learned, state-independent log std" in refusal({'policy': {'model': {'sigma_type': 'conditioned'}}},
                                                           policy='ppo')


def test_dings_linear_lr_schedule_is_tidals_lr_decay():
    main = {'policy': {'collect': {'n_sample': 2048}, 'learn': {'lr_scheduler': {'epoch_num': 100,
                                                                                'min_lr_lambda': 0}}}}
    cfg, _ = compiled(main, policy='ppo')
    assert (cfg.policy.learn.lr_decay, cfg.policy.learn.decay_env_steps) == (True, 204800)
    main['policy']['learn']['lr_scheduler']['min_lr_lambda'] = 0.1
    assert refusal(main, policy='ppo').startswith("config key 'policy.learn.lr_scheduler' is {'epoch_num': 100, ")


def test_ppg_keys_become_tidals_aux_phase():
    main = {'policy': {'learn': {'actor_epoch_per_collect': 2, 'critic_epoch_per_collect': 2, 'aux_freq': 4,
                                 'aux_train_epoch': 3, 'aux_bc_weight': 0.5, 'value_norm': False},
                       'model': {'encoder_hidden_size_list': [64, 64], 'share_encoder': False}}}
    cfg, notes = compiled(main, policy='ppg')
    assert cfg.policy.learn.epoch_per_collect == 2
    assert (cfg.policy.aux.interval, cfg.policy.aux.num_updates_per_train_iter,
            cfg.policy.aux.policy_kl_loss_weight) == (4, 3, 0.5)
    # DI-engine's PPG model: an actor head of 2 layers, a critic head of 1
    assert (cfg.policy.model.encoder_hidden_sizes, cfg.policy.model.value_encoder_hidden_sizes) == \
        ([64, 64, 64, 64], [64, 64, 64])
    assert notes['policy.learn.aux_freq'][0] == "-> 'policy.aux.interval' = 4"
    main['policy']['learn']['critic_epoch_per_collect'] = 1
    assert "'policy.learn.critic_epoch_per_collect' (1) differ" in refusal(main, policy='ppg')


def test_dings_off_policy_ppg_is_refused_naming_tidals():
    assert refusal({}, policy='ppg_offpolicy') == (
        "DI-engine policy type 'ppg_offpolicy' is not supported: DI-engine's off-policy PPG replays the policy "
        "phase from a buffer; tidal's PPG is on-policy: set create_config.policy.type='ppg' and run it with tidal "
        "-m serial_onpolicy")


def test_discrete_sac_eps_passes_through():
    eps = {'type': 'exp', 'start': 0.95, 'end': 0.1, 'decay': 50000}
    cfg, notes = compiled({'policy': {'other': {'eps': eps}}}, {'env': {'type': 'cartpole'}}, 'discrete_sac')
    assert cfg.policy.other.eps == eps and not any('eps' in key for key in notes)


@pytest.mark.parametrize('env_type, env, env_id, kwargs', [
    ('cartpole', {}, 'CartPole-v1', {'max_episode_steps': 200}),
    ('lunarlander', {'env_id': 'LunarLanderContinuous-v2'}, 'LunarLander-v3', {'continuous': True}),
    ('lunarlander', {'continuous': True}, 'LunarLander-v3', {'continuous': True}),
    ('bipedalwalker', {'hardcore': True}, 'BipedalWalker-v3', {'hardcore': True}),
    ('mountain_car', {}, 'MountainCar-v0', {}),
    ('acrobot', {}, 'Acrobot-v1', {}),
    ('mujoco', {'env_id': 'Hopper-v3'}, 'Hopper-v5', {}),
    ('mujoco', {'env_id': 'HalfCheetah-v2'}, 'HalfCheetah-v5', {}),
])
def test_ding_env_types_become_gymnasium_ids(env_type, env, env_id, kwargs):
    cfg, notes = compiled({'env': env}, {'env': {'type': env_type}}, 'ppo')
    assert (cfg.env.type, cfg.env.env_id, cfg.env.env_kwargs) == ('gym', env_id, kwargs)
    assert notes['env.type'][0].startswith(f"-> 'env.type' = 'gym', 'env.env_id' = '{env_id}'")


def test_ant_v3_observation_size_is_dropped_for_v5s():
    cfg, notes = compiled({'env': {'env_id': 'Ant-v3'}, 'policy': {'model': {'obs_shape': 111}}},
                          {'env': {'type': 'mujoco'}}, 'sac')
    assert 'obs_shape' not in cfg.policy.model and notes['policy.model.obs_shape'][0].startswith('dropped')


def test_ding_petting_zoo_is_mpe2s_simple_spread_with_the_team_reward():
    main = {'env': {'env_family': 'mpe', 'env_id': 'simple_spread_v2', 'n_agent': 4, 'n_landmark': 4,
                    'max_cycles': 30, 'agent_obs_only': False, 'agent_specific_global_state': True,
                    'continuous_actions': False},
            'policy': {'multi_agent': True, 'model': {'agent_obs_shape': 24, 'global_obs_shape': 60}}}
    cfg, notes = compiled(main, {'env': {'type': 'petting_zoo'}}, 'discrete_sac')
    assert (cfg.env.type, cfg.env.env_id, cfg.env.env_kwargs) == \
        ('pettingzoo', 'mpe2.simple_spread_v3', {'N': 4, 'max_cycles': 30, 'continuous_actions': False})
    assert (cfg.env.team_reward, cfg.env.reward_scale) == (True, 2.0)
    assert 'global_obs_shape' not in cfg.policy.model and cfg.policy.model.agent_obs_shape == 24
    assert notes['env.agent_specific_global_state'][0] == 'ignored'
    main['env']['n_landmark'] = 2
    assert "'env.n_landmark' is 2 but env.n_agent is 4" in refusal(main, {'env': {'type': 'petting_zoo'}},
                                                                     'discrete_sac')
    main['env'].update(n_landmark=4, env_id='simple_tag_v2')
    assert "builds only MPE's simple_spread" in refusal(main, {'env': {'type': 'petting_zoo'}}, 'discrete_sac')


def test_ding_atari_runs_as_tidal_atari_with_its_conv_encoder_and_channel_last_frames():
    main = {'env': {'env_id': 'PongNoFrameskip-v4', 'frame_stack': 4},
            'policy': {'model': {'obs_shape': [4, 84, 84], 'action_shape': 6, 'encoder_hidden_size_list': [64, 64, 128],
                                 'actor_head_hidden_size': 128, 'critic_head_hidden_size': 128}}}
    cfg, notes = compiled(main, {'env': {'type': 'atari', 'import_names': ['dizoo.atari.envs.atari_env']}}, 'ppo')
    assert (cfg.env.type, cfg.env.env_id, cfg.env.frame_stack, cfg.env.import_names) == \
        ('atari', 'PongNoFrameskip-v4', 4, [])
    model = cfg.policy.model
    assert 'obs_shape' not in model and notes['policy.model.obs_shape'][0].startswith('dropped')
    assert (model.conv_channels, model.conv_kernel_sizes, model.conv_strides, model.pixel_scale) == \
        ([64, 64, 128], [8, 4, 3], [4, 2, 1], 1 / 255)
    assert (model.encoder_hidden_sizes, model.share_encoder, model.activation) == ([128, 128], True, 'relu')


def test_kl_beta_counts_only_with_a_pretrained_model():
    cfg, notes = compiled({'policy': {'learn': {'kl_beta': 0.01, 'pretrained_model_path': None}}}, CREATE, 'ppo')
    assert 'kl_beta' not in cfg.policy.learn and notes['policy.learn.kl_beta'][0].startswith('checked')
    assert refusal({'policy': {'learn': {'kl_beta': 0.01, 'pretrained_model_path': 'ppo.pth'}}}, CREATE, 'ppo') == \
        "config key 'policy.learn.kl_beta' is 0.01 with a pretrained_model_path: tidal's PPO has no KL penalty term"


def test_tidal_atari_config_keeps_its_own_model():
    model = {'conv_channels': [32, 64, 64], 'conv_kernel_sizes': [8, 4, 3], 'conv_strides': [4, 2, 1],
             'encoder_hidden_sizes': [512]}
    cfg, notes = compiled({'env': {'env_id': 'ALE/Pong-v5'}, 'policy': {'model': model}}, {'env': {'type': 'atari'}},
                          'ppo')
    assert {key: cfg.policy.model[key] for key in model} == model and not notes


@pytest.mark.parametrize('env_type, env_id', [('procgen', 'coinrun')])
def test_env_types_tidal_lacks_are_refused_in_one_line(env_type, env_id):
    message = refusal({'env': {'env_id': env_id}}, {'env': {'type': env_type}}, 'ppo')
    assert message.startswith(f"DI-engine env type '{env_type}' (env.env_id '{env_id}') is not supported: ")


def test_values_tidal_cannot_honour_are_refused():
    assert "is tidal's policy type 'sac_v'" in refusal({'policy': {'learn': {'value_network': True}}})


def test_a_mapped_key_beside_its_tidal_key_must_agree():
    assert refusal({'env': {'act_scale': True, 'normalize_action': False}}) == \
        "config key 'env.normalize_action' is False but DI-engine's 'env.act_scale' sets it to True; keep one of them"


def test_ding_sqil_config_runs_as_sqil_sac():
    cfg, notes = compiled({'policy': {'expert_random_collect_size': 100, 'collect': {'model_path': 'x.pth'}}})
    assert cfg.policy.type == 'sqil_sac' and notes['create_config.policy.type'][0] == "-> 'sqil_sac'"


def test_zoo_config_importing_ding_entry_at_the_top_loads(tmp_path):
    path = tmp_path / 'cartpole_sac_config.py'
    path.write_text('from easydict import EasyDict\nfrom ding.entry import serial_pipeline\n'
                    "main_config = EasyDict(dict(env=dict()))\ncreate_config = dict(env=dict(type='cartpole'))\n"
                    "if __name__ == '__main__':\n    serial_pipeline((main_config, create_config), seed=0)\n")
    assert read_config(str(path)) == ({'env': {}}, {'env': {'type': 'cartpole'}})
    assert 'ding' not in sys.modules


def test_run_folder_gets_the_table_and_the_terminal_one_line(tmp_path, capsys):
    cfg, _ = compiled({'policy': {'multi_gpu': False, 'learn': {'learner': {'hook': {'log_show_after_iter': 7}}}}})
    write_ding_mapping(cfg, tmp_path)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f'tidal: 2 DI-engine keys converted, 2 ignored: see {tmp_path / "ding_mapping.txt"}']
    table = (tmp_path / 'ding_mapping.txt').read_text()
    assert "policy type 'sac'" in table and 'Converted (2):' in table and 'Ignored (2):' in table
    assert ("  policy.learn.learner.hook.log_show_after_iter = 7\n"
            "      -> 'policy.learn.learner.log_freq' = 7\n") in table


def test_docs_tables_match_the_mapping():
    assert markdown_tables() in DOCS_PAGE.read_text()
    assert all(f'`{rule.path}`' in markdown_tables() for rule in KEY_RULES)


def test_env_type_set_in_main_config_is_translated_too():
    cfg, _ = compiled({'env': {'type': 'acrobot'}}, {'policy': {'type': 'ppo'}})
    assert (cfg.env.type, cfg.env.env_id) == ('gym', 'Acrobot-v1')


def test_no_rule_rewrites_a_key_the_policy_it_holds_for_declares():
    """A rule must never rewrite a key tidal itself reads; `policy.cuda` is the one shared key, rewritten only
    where DI-engine's meaning differs (cuda=True without a device)."""
    import tidal.envs  # noqa: F401  (registers the env and the policies' models)
    import tidal.policies  # noqa: F401
    from tidal.base.defaults import class_defaults
    from tidal.config.tree import MISSING, value_at
    from tidal.registry import ENV_REGISTRY, POLICY_REGISTRY
    shared = set()
    for name in POLICY_REGISTRY.names():
        declared = {'policy': class_defaults(POLICY_REGISTRY.get(name)),
                    'env': class_defaults(ENV_REGISTRY.get('gym'))}
        shared |= {rule.path for rule in KEY_RULES if rule.holds_for(POLICY_REGISTRY.family(name)) and not rule.ding_only
                   and value_at(declared, rule.path, MISSING) is not MISSING}
    assert shared == {'policy.cuda'}


#: Every key DI-engine's policies read, with DI-engine's default value (its policy and model configs).
_SAC_KEYS = {'cuda': False, 'on_policy': False, 'multi_gpu': False, 'bp_update_sync': True, 'traj_len_inf': False,
             'priority': False, 'priority_IS_weight': False, 'random_collect_size': 10000,
             'transition_with_policy_data': True, 'multi_agent': False, 'model.twin_critic': True,
             'model.actor_head_hidden_size': 64, 'model.actor_head_layer_num': 1, 'model.critic_head_hidden_size': 64,
             'model.critic_head_layer_num': 1, 'model.activation': nn.ReLU(), 'model.norm_type': None,
             'model.share_encoder': False, 'learn.update_per_collect': 1, 'learn.batch_size': 256,
             'learn.learning_rate_q': 3e-4, 'learn.learning_rate_policy': 3e-4, 'learn.learning_rate_alpha': 3e-4,
             'learn.target_theta': 0.005, 'learn.discount_factor': 0.99, 'learn.alpha': 0.2, 'learn.auto_alpha': True,
             'learn.log_space': True, 'learn.target_entropy': None, 'learn.ignore_done': False, 'learn.init_w': 3e-3,
             'learn.resume_training': False, 'collect.n_sample': 1, 'collect.unroll_len': 1,
             'collect.collector_logit': False, 'eval.evaluator.eval_freq': 1000,
             'other.replay_buffer.replay_buffer_size': 1000000}
_VAC_KEYS = {'model.share_encoder': True, 'model.encoder_hidden_size_list': [128, 128, 64],
             'model.actor_head_hidden_size': 64, 'model.actor_head_layer_num': 1, 'model.critic_head_hidden_size': 64,
             'model.critic_head_layer_num': 1, 'model.activation': nn.ReLU(), 'model.norm_type': None,
             'model.impala_cnn_encoder': False}
_PPO_KEYS = {'cuda': False, 'on_policy': True, 'multi_gpu': False, 'priority': False, 'priority_IS_weight': False,
             'recompute_adv': True, 'action_space': 'continuous', 'nstep_return': False, 'multi_agent': False,
             'transition_with_policy_data': True, **_VAC_KEYS, 'model.action_space': 'continuous',
             'model.sigma_type': 'independent', 'model.fixed_sigma_value': 0.3, 'model.bound_type': None,
             'model.encoder': None, 'learn.epoch_per_collect': 10, 'learn.batch_size': 64, 'learn.learning_rate': 3e-4,
             'learn.lr_scheduler': None, 'learn.value_weight': 0.5, 'learn.entropy_weight': 0.0,
             'learn.clip_ratio': 0.2, 'learn.adv_norm': True, 'learn.value_norm': True, 'learn.ppo_param_init': True,
             'learn.grad_clip_type': 'clip_norm', 'learn.grad_clip_value': 0.5, 'learn.ignore_done': False,
             'learn.kl_type': 'k1', 'learn.kl_beta': 0.0, 'learn.pretrained_model_path': None,
             'learn.resume_training': False, 'collect.n_sample': 2048, 'collect.unroll_len': 1,
             'collect.discount_factor': 0.99, 'collect.gae_lambda': 0.95}
_PPG_KEYS = {'cuda': False, 'on_policy': True, 'priority': False, 'priority_IS_weight': False, **_VAC_KEYS,
             'model.share_encoder': False, 'model.actor_head_layer_num': 2, 'learn.actor_epoch_per_collect': 1,
             'learn.critic_epoch_per_collect': 1, 'learn.batch_size': 64, 'learn.learning_rate': 0.001,
             'learn.value_weight': 0.5, 'learn.entropy_weight': 0.01, 'learn.clip_ratio': 0.2,
             'learn.value_norm': False, 'learn.adv_norm': False, 'learn.aux_freq': 8, 'learn.aux_train_epoch': 6,
             'learn.aux_bc_weight': 1, 'learn.grad_clip_type': 'clip_norm', 'learn.grad_clip_value': 10,
             'learn.ignore_done': False, 'collect.n_sample': 128, 'collect.unroll_len': 1,
             'collect.discount_factor': 0.99, 'collect.gae_lambda': 0.95}
_DING_KEYS = {
    'sac': ('pendulum', {}, {**_SAC_KEYS, 'model.action_space': 'reparameterization'}),
    'discrete_sac': ('cartpole', {}, {**_SAC_KEYS, 'other.eps.type': 'exp', 'other.eps.start': 0.95,
                                      'other.eps.end': 0.1, 'other.eps.decay': 50000}),
    'sqil_sac': ('pendulum', {}, {**_SAC_KEYS, 'model.action_space': 'reparameterization',
                                  'expert_random_collect_size': 10000, 'nstep': 1, 'discount_factor': 0.97,
                                  'learn.reparameterization': True, 'learn.value_network': False,
                                  'collect.model_path': 'model_path_placeholder'}),
    'ppo': ('pendulum', {}, _PPO_KEYS),
    'ppg': ('cartpole', {}, _PPG_KEYS),
    'masac': ('petting_zoo', {'env_family': 'mpe', 'env_id': 'simple_spread_v2', 'n_agent': 3, 'n_landmark': 3,
                              'max_cycles': 25, 'agent_obs_only': False, 'agent_specific_global_state': True,
                              'continuous_actions': False},
              {**_SAC_KEYS, 'multi_agent': True, 'model.agent_obs_shape': 18, 'model.global_obs_shape': 48,
               'model.action_shape': 5}),
}


def _tree(flat: dict) -> dict:
    tree: dict = {}
    for path, value in flat.items():
        *sections, key = path.split('.')
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = value
    return tree


@pytest.mark.parametrize('family', sorted(_DING_KEYS))
def test_every_key_ding_reads_at_its_default_is_taken(family):
    env_type, env, keys = _DING_KEYS[family]
    policy = {'masac': 'discrete_sac'}.get(family, family)
    cfg, notes = compiled({'env': env, 'policy': _tree(keys)}, {'env': {'type': env_type}}, policy)
    assert cfg.policy.type == policy and notes


def test_mujoco_wrapper_normalization_is_ppos_and_refused_for_sac():
    main = {'env': {'env_id': 'Hopper-v3', 'norm_obs': {'use_norm': True}, 'norm_reward': {'use_norm': False}}}
    cfg, notes = compiled(main, {'env': {'type': 'mujoco'}}, 'ppg')
    assert (cfg.policy.normalize.obs, cfg.policy.normalize.reward) == (True, False)
    assert notes['env.norm_obs'][0] == "-> 'policy.normalize.obs' = True"
    assert refusal(main, {'env': {'type': 'mujoco'}}, 'sac') == \
        "config key 'env.norm_obs' is {'use_norm': True}: tidal's SAC does not normalize observations"


@pytest.mark.parametrize('ding_manager, manager', [('async_subprocess', 'subprocess'), ('env_pool', 'envpool'),
                                                   ('subprocess', 'subprocess'), ('base', 'base')])
def test_ding_env_manager_types_become_tidals(ding_manager, manager):
    cfg, notes = compiled({}, {**CREATE, 'env_manager': {'type': ding_manager}})
    assert cfg.env_manager.type == manager
    assert ('create_config.env_manager.type' in notes) == (ding_manager != manager)


DQN_CREATE = {'env': {'type': 'cartpole', 'import_names': ['dizoo.classic_control.cartpole.envs.cartpole_env']},
              'env_manager': {'type': 'base'}, 'policy': {'type': 'dqn'}}


def parameters(model_cfg: dict) -> int:
    return sum(p.numel() for p in MODEL_REGISTRY.build('dqn', **model_cfg).parameters())


@pytest.mark.parametrize('dueling, count', [
    # DI-engine's DQN on CartPole (4 obs, 2 actions), encoder_hidden_size_list [128, 128, 64]: FCEncoder
    # 4*128+128 + 128*128+128 + 128*64+64 = 640 + 16512 + 8256 = 25408; DuelingHead (head_layer_num 1, 64 wide):
    # A = 64*64+64 + 64*2+2 = 4290, V = 64*64+64 + 64*1+1 = 4225; 25408 + 4290 + 4225 = 33923
    (True, 33923),
    # DiscreteHead: Q = 64*64+64 + 64*2+2 = 4290; 25408 + 4290 = 29698
    (False, 29698),
])
def test_ding_dqn_keys_build_dings_network(dueling, count):
    main = {'env': {'env_id': 'CartPole-v0'},
            'policy': {'model': {'obs_shape': 4, 'action_shape': 2, 'encoder_hidden_size_list': [128, 128, 64],
                                 'dueling': dueling}}}
    for policy in ('dqn', 'sql'):
        cfg, notes = compiled(main, DQN_CREATE, policy)
        assert cfg.policy.model.head_layer_num == 1 and parameters(cfg.policy.model) == count
        assert notes['policy.model.head_layer_num'][0] == "-> 'policy.model.head_layer_num' = 1"


def test_tidal_dqn_config_with_the_same_keys_keeps_its_head():
    # tidal's zoo cartpole_dqn: the same encoder (25408), then V 64*1+1 = 65 and A 64*2+2 = 130: 25603
    cfg = compile_config(*resolve_config_source('cartpole_dqn'), infer_shapes=False)
    assert mapping_of(cfg) is None and 'head_layer_num' not in cfg.policy.model
    assert parameters({**cfg.policy.model, 'obs_shape': 4, 'action_shape': 2}) == 25603


def test_ding_dqn_on_atari_gets_dings_conv_encoder():
    main = {'env': {'env_id': 'PongNoFrameskip-v4', 'frame_stack': 4},
            'policy': {'model': {'obs_shape': [4, 84, 84], 'action_shape': 6,
                                 'encoder_hidden_size_list': [128, 128, 512]}}}
    cfg, notes = compiled(main, {'env': {'type': 'atari', 'import_names': ['dizoo.atari.envs.atari_env']},
                                 'policy': {'type': 'dqn'}})
    model = cfg.policy.model
    assert (model.conv_channels, model.conv_kernel_sizes, model.conv_strides, model.pixel_scale,
            model.head_layer_num) == ([128, 128, 512], [8, 4, 3], [4, 2, 1], 1 / 255, 1)
    # DI-engine's ConvEncoder on [4, 84, 84]: 4*128*8*8+128 = 32896 (20x20), 128*128*4*4+128 = 262272 (9x9),
    # 128*512*3*3+512 = 590336 (7x7), 512*7*7*512+512 = 12845568; DuelingHead 512 wide: A = 512*512+512 + 512*6+6 =
    # 265734, V = 512*512+512 + 512+1 = 263169; in all 14259975
    assert parameters({**model, 'obs_shape': [84, 84, 4]}) == 14259975
