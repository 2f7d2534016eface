"""DI-engine configs: env types, import names and keys turned into tidal's, one warning line each."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tidal.config import compile_config, read_config
from tidal.config.ding_tables import KEY_RULES, markdown_tables
from tidal.base.errors import ConfigError

DING_CONFIGS = Path(__file__).parent / 'ding_configs'
README = Path(__file__).parents[2] / 'README.md'

CREATE = {'env': {'type': 'pendulum', 'import_names': ['dizoo.classic_control.pendulum.envs.pendulum_env']},
          'env_manager': {'type': 'base'}, 'policy': {'type': 'sac'}}


def compiled(main: dict, create: dict = CREATE, capsys=None):
    cfg = compile_config(copy.deepcopy(main), copy.deepcopy(create), infer_shapes=False)
    warnings = capsys.readouterr().err.splitlines() if capsys is not None else []
    return cfg, warnings


def test_dizoo_import_is_dropped_and_env_type_runs_as_gym(capsys):
    cfg, warnings = compiled({}, capsys=capsys)
    assert (cfg.env.type, cfg.env.env_id, cfg.env.import_names) == ('gym', 'Pendulum-v1', [])
    assert warnings == [
        "tidal: warning: dropped create_config.env.import_names entry "
        "'dizoo.classic_control.pendulum.envs.pendulum_env': a DI-engine module, which tidal does not import "
        "(its gym adapter makes the env)",
        "tidal: warning: DI-engine env type 'pendulum' runs as tidal's env type 'gym' with env.env_id='Pendulum-v1'",
    ]


def test_each_mapped_or_ignored_key_warns_once_saying_what_was_done(capsys):
    main = {'env': {'act_scale': True, 'manager': {'shared_memory': False}},
            'policy': {'cuda': True, 'multi_gpu': False,
                       'model': {'action_space': 'reparameterization', 'actor_head_hidden_size': 32,
                                 'critic_head_hidden_size': 64, 'critic_head_layer_num': 2},
                       'learn': {'value_network': False, 'learner': {'hook': {'save_ckpt_after_iter': 500}}},
                       'collect': {'noise_sigma': 0.2}}}
    cfg, warnings = compiled(main, capsys=capsys)
    assert cfg.env.normalize_action is True and cfg.policy.device == 'auto' and cfg.policy.cuda is False
    assert cfg.policy.model.actor_hidden_sizes == [32, 32]
    assert cfg.policy.model.critic_hidden_sizes == [64, 64, 64]
    assert cfg.policy.learn.learner.save_ckpt_freq == 500
    key_lines = warnings[2:]
    assert len(key_lines) == len(set(key_lines)) == 11
    assert key_lines == [
        "tidal: warning: ignored DI-engine key 'policy.model.action_space' ('reparameterization'): it names "
        "DI-engine's QAC actor head; tidal's SAC actor is always a reparameterized tanh-Gaussian",
        "tidal: warning: DI-engine key 'policy.model.actor_head_hidden_size' (32) is part of "
        "'policy.model.actor_hidden_sizes' = [32, 32]: the same layers as DI-engine's: encoder_hidden_size_list "
        "(or one input layer), then head_layer_num more of head_hidden_size",
        "tidal: warning: DI-engine key 'policy.model.critic_head_hidden_size' (64) is part of "
        "'policy.model.critic_hidden_sizes' = [64, 64, 64]: the same layers as DI-engine's: "
        "encoder_hidden_size_list (or one input layer), then head_layer_num more of head_hidden_size",
        "tidal: warning: DI-engine key 'policy.model.critic_head_layer_num' (2) is part of "
        "'policy.model.critic_hidden_sizes' = [64, 64, 64]: the same layers as DI-engine's: "
        "encoder_hidden_size_list (or one input layer), then head_layer_num more of head_hidden_size",
        "tidal: warning: DI-engine key 'env.act_scale' is tidal's 'env.normalize_action': set it to True",
        "tidal: warning: ignored DI-engine key 'env.manager' ({'shared_memory': False}): tidal's env managers take "
        "no options; pick one with create_config.env_manager.type ('base' or 'subprocess')",
        "tidal: warning: DI-engine key 'policy.cuda' (True) became 'policy.device' = 'auto': cuda=True (without "
        "policy.device) is CUDA when available, as in DI-engine; False is tidal's own key",
        "tidal: warning: ignored DI-engine key 'policy.multi_gpu' (False): several learner processes run under torchrun (README: Several learner processes)",
        "tidal: warning: dropped DI-engine key 'policy.learn.value_network' (False): False is tidal's 'sac'; True "
        "is policy type 'sac_v'",
        "tidal: warning: DI-engine key 'policy.learn.learner.hook.save_ckpt_after_iter' is tidal's "
        "'policy.learn.learner.save_ckpt_freq': set it to 500",
        "tidal: warning: ignored DI-engine key 'policy.collect.noise_sigma' (0.2): SAC explores by sampling its "
        "own Gaussian",
    ]


def test_tidal_keys_and_configs_give_no_warning(capsys):
    create = {'env': {'type': 'gym'}, 'policy': {'type': 'sac'}}
    cfg, warnings = compiled({'env': {'env_id': 'Pendulum-v1'}, 'policy': {'cuda': False, 'device': 'cpu'}},
                             create, capsys)
    assert warnings == [] and cfg.policy.device == 'cpu'


def test_cuda_beside_a_device_is_tidals_own_key(capsys):
    cfg, warnings = compiled({'policy': {'cuda': True, 'device': 'cpu'}}, capsys=capsys)
    assert (cfg.policy.device, cfg.policy.cuda) == ('cpu', True)
    assert not any('policy.cuda' in line for line in warnings)


def test_unknown_key_stays_an_error_with_did_you_mean(capsys):
    with pytest.raises(ConfigError) as err:
        compiled({'policy': {'learn': {'btach_size': 64}}})
    assert str(err.value) == "unknown config key 'policy.learn.btach_size'; did you mean 'policy.learn.batch_size'?"


def test_unknown_model_key_stays_an_error_with_did_you_mean(capsys):
    with pytest.raises(ConfigError) as err:
        compiled({'policy': {'model': {'actor_head_hidden_size': 16, 'twin_critics': True}}})
    assert str(err.value) == ("policy.model.twin_critics is not an argument of model 'continuous_qac'; did you "
                              "mean 'twin_critic'?")


def test_ppo_head_layout_becomes_one_encoder(capsys):
    create = {**CREATE, 'policy': {'type': 'ppo'}}
    main = {'policy': {'model': {'encoder_hidden_size_list': [64, 64], 'actor_head_hidden_size': 128,
                                 'critic_head_hidden_size': 128, 'action_space': 'continuous'},
                       'learn': {'ppo_param_init': False, 'grad_clip_type': 'clip_norm', 'grad_clip_value': 1.0}}}
    cfg, _ = compiled(main, create, capsys)
    assert cfg.policy.model.encoder_hidden_sizes == [64, 64, 128]
    assert cfg.policy.model.action_space == 'continuous' and cfg.policy.model.orthogonal_init is False
    assert cfg.policy.learn.grad_clip_norm == 1.0


def test_ppo_critic_layout_unlike_the_actors_is_refused(capsys):
    create = {**CREATE, 'policy': {'type': 'ppo'}}
    with pytest.raises(ConfigError, match="tidal's actor_critic gives both the same encoder_hidden_sizes"):
        compiled({'policy': {'model': {'actor_head_hidden_size': 64, 'critic_head_hidden_size': 32}}}, create)


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
def test_ding_env_types_become_gymnasium_ids(capsys, env_type, env, env_id, kwargs):
    create = {'env': {'type': env_type}, 'policy': {'type': 'ppo'}}
    cfg, warnings = compiled({'env': env}, create, capsys)
    assert (cfg.env.type, cfg.env.env_id, cfg.env.env_kwargs) == ('gym', env_id, kwargs)
    assert f"DI-engine env type '{env_type}' runs as tidal's env type 'gym' with env.env_id='{env_id}'" in warnings[0]


def test_atari_is_refused_naming_the_wrappers():
    create = {'env': {'type': 'atari'}, 'policy': {'type': 'ppo'}}
    with pytest.raises(ConfigError) as err:
        compiled({'env': {'env_id': 'PongNoFrameskip-v4'}}, create)
    assert str(err.value).startswith("DI-engine env type 'atari' (env.env_id 'PongNoFrameskip-v4') is not "
                                     "supported: refused: DI-engine's Atari wrappers (no-op reset, max-and-skip")


def test_values_tidal_cannot_honour_are_refused():
    with pytest.raises(ConfigError, match="policy.nstep=3: tidal's SAC learns from 1-step TD targets"):
        compiled({'policy': {'nstep': 3}})
    with pytest.raises(ConfigError, match="is tidal's policy type 'sac_v'"):
        compiled({'policy': {'learn': {'value_network': True}}})


def test_a_mapped_key_beside_its_tidal_key_must_agree():
    with pytest.raises(ConfigError) as err:
        compiled({'env': {'act_scale': True, 'normalize_action': False}})
    assert str(err.value) == ("config key 'env.normalize_action' is False but DI-engine's 'env.act_scale' sets it "
                              "to True; keep one of them")


def test_ding_sqil_config_runs_as_sqil_sac(capsys):
    cfg, warnings = compiled({'policy': {'expert_random_collect_size': 100, 'collect': {'model_path': 'x.pth'}}},
                             capsys=capsys)
    assert cfg.policy.type == 'sqil_sac'
    assert "tidal: warning: DI-engine's SQIL config (policy type 'sac' with SQIL's expert keys) runs as tidal's " \
           "policy type 'sqil_sac'" in warnings


def test_zoo_config_importing_ding_entry_at_the_top_loads(tmp_path):
    path = tmp_path / 'cartpole_sac_config.py'
    path.write_text('from easydict import EasyDict\nfrom ding.entry import serial_pipeline\n'
                    "main_config = EasyDict(dict(env=dict()))\ncreate_config = dict(env=dict(type='cartpole'))\n"
                    "if __name__ == '__main__':\n    serial_pipeline((main_config, create_config), seed=0)\n")
    assert read_config(str(path)) == ({'env': {}}, {'env': {'type': 'cartpole'}})
    import sys
    assert 'ding' not in sys.modules


def test_readme_tables_match_the_mapping():
    assert markdown_tables() in README.read_text()
    assert all(f'`{rule.path}`' in markdown_tables() for rule in KEY_RULES)


def test_env_type_set_in_main_config_is_translated_too(capsys):
    cfg, _ = compiled({'env': {'type': 'acrobot'}}, {'policy': {'type': 'ppo'}}, capsys)
    assert (cfg.env.type, cfg.env.env_id) == ('gym', 'Acrobot-v1')


def test_no_tidal_class_declares_a_key_the_table_rewrites():
    """A rule must never rewrite a key tidal itself reads; `policy.cuda` is the one shared key, rewritten only
    where DI-engine's meaning differs (cuda=True without a device)."""
    import tidal.envs  # noqa: F401  (registers the env and the policies' models)
    import tidal.policies  # noqa: F401
    from tidal.config.declared import MISSING, value_at
    from tidal.base.defaults import class_defaults
    from tidal.registry import ENV_REGISTRY, POLICY_REGISTRY
    shared = set()
    for name in POLICY_REGISTRY.names():
        declared = {'policy': class_defaults(POLICY_REGISTRY.get(name)),
                    'env': class_defaults(ENV_REGISTRY.get('gym'))}
        shared |= {rule.path for rule in KEY_RULES if value_at(declared, rule.path) is not MISSING}
    assert shared == {'policy.cuda'}
